"""The spec floor: the words every stage shares (devices and their platforms, workloads, precisions,
framework declarations, the run spec and the record path). It imports no framework and nothing above it."""
