"""Verify another machine's results bundle and unpack it for aggregation."""

import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup.records import bundle
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    copy = Path(snakemake.input.bundle)  # the bytes verify_bundle verified, no file read again
    verified = json.loads(Path(snakemake.input.verified).read_text(encoding="utf-8"))
    if verified.get("dropped"):  # not trusted: an empty folder that says why (the report names it)
        bundle.write_dropped(snakemake.output[0], snakemake.wildcards.name, verified["dropped"])
        log(f"{snakemake.wildcards.name}: left out ({verified['dropped']})")
    elif hashlib.sha256(copy.read_bytes()).hexdigest() != verified["sha256"]:
        raise bundle.BundleError(f"{copy} changed after it was verified. Fix: delete it and run snakemake again.")
    else:
        meta = bundle.unpack(copy, snakemake.output[0])
        log(f"{copy}: {len(meta['files'])} files from {meta['host']} verified and unpacked")
