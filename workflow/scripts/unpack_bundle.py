"""Verify another machine's results bundle and unpack it for aggregation."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup import bundle
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    meta = bundle.unpack(snakemake.input[0], snakemake.output[0])
    log(f"{snakemake.input[0]}: {len(meta['files'])} files from {meta['host']} verified and unpacked")
