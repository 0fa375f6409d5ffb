"""Fetch one MNIST file from the first mirror that has a verified copy."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup.data import mnist
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    mnist.fetch_verified(
        name=snakemake.wildcards.name,
        # where and how to look are not params: changing them never
        # re-downloads a file that is already verified
        mirrors=snakemake.config["mirrors"],
        dest=Path(snakemake.output[0]),
        expected_sha256=snakemake.params.sha256,
        timeout=snakemake.config["download_timeout"],
        retries=snakemake.config["download_retries"],
        deadline=snakemake.config["download_deadline"],
        log=log,
    )
