"""Verify another machine's results bundle and unpack it for aggregation."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup.records import bundle
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    meta = bundle.unpack(snakemake.input.bundle, snakemake.output[0])
    log(f"{snakemake.input.bundle}: {len(meta['files'])} files from {meta['host']} verified and unpacked")
