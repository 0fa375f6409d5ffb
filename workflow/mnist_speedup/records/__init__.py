"""The records: one JSON per run, sealed, summarised, carried in bundles."""
