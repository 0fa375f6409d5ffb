"""Parse the verified IDX files and write the train/validation/test split."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup import atomic
from mnist_speedup.data import mnist
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    out = snakemake.output
    sizes = mnist.prepare(
        Path(snakemake.input[0]).parent,
        Path(out.npz),
        validation_size=snakemake.params.validation_size,
    )
    atomic.write_text(out.digest, mnist.content_digest(Path(out.npz)) + "\n")
    for stale in Path(out.digest).parent.glob("mnist-*.sha256"):  # other data's: their runs must rerun
        if stale.name != Path(out.digest).name:
            stale.unlink()
    log(f"wrote {out.npz}: {sizes}")
