"""Importable logic of the MNIST CPU/GPU speedup workflow.

The Snakemake rule scripts in ``workflow/scripts`` are thin wrappers around
the modules of this package, which are unit-tested on their own.
"""

__version__ = "0.1.0"
