"""Verify another machine's results bundle before anything of it is unpacked."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup import atomic
from mnist_speedup.records import bundle, signing
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    if snakemake.params.trusted_keys:  # who made it, before anything of it is read
        log(f"{snakemake.input[0]}: signed by {signing.verify(snakemake.input[0], snakemake.params.trusted_keys)}")
    meta = bundle.check(snakemake.input[0])
    atomic.write_text(snakemake.output[0], json.dumps({"host": meta["host"], "files": meta["files"]}, indent=1) + "\n")
    log(f"{snakemake.input[0]}: {len(meta['files'])} files from {meta['host']} verified")
