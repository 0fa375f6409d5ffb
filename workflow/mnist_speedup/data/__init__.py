"""The data: MNIST fetched from mirrors, verified, parsed."""
