"""Verify another machine's results bundle before anything of it is unpacked."""

import hashlib
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup import atomic
from mnist_speedup.records import bundle, signing
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    given, copy = Path(snakemake.input[0]), Path(snakemake.output.bundle)
    # what is verified is exactly what is unpacked: a private copy, never the given file read again
    dropped = None
    with atomic.replacing(copy) as staged:
        shutil.copyfile(given, staged)
        try:
            if snakemake.params.trusted_keys:  # who made it, before anything of it is read
                signer = signing.verify(staged, snakemake.params.trusted_keys, signing.signature_path(given))
                log(f"{given}: signed by {signer}")
            meta = bundle.check(staged)
        except bundle.BundleError as exc:  # damaged or edited: refused, named as the user named it
            raise type(exc)(str(exc).replace(str(staged), str(given))) from None
        except signing.SignatureError as exc:  # not (or no longer) trusted: left out, and the report says so
            dropped = str(exc).replace(str(staged), str(given))
            staged.write_bytes(b"")  # nothing of it is kept
    if dropped:
        atomic.write_text(snakemake.output.verified, json.dumps({"dropped": dropped, "sha256": None}) + "\n")
        log(f"{given}: left out ({dropped})")
    else:
        sha256 = hashlib.sha256(copy.read_bytes()).hexdigest()
        record = {"host": meta["host"], "files": meta["files"], "sha256": sha256}
        atomic.write_text(snakemake.output.verified, json.dumps(record, indent=1) + "\n")
        log(f"{given}: {len(meta['files'])} files from {meta['host']} verified (a copy: {copy})")
