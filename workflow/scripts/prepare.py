"""Parse the verified IDX files and write the train/validation/test split."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup import mnist
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    sizes = mnist.prepare(
        Path(snakemake.input[0]).parent,
        Path(snakemake.output[0]),
        validation_size=snakemake.params.validation_size,
    )
    log(f"wrote {snakemake.output[0]}: {sizes}")
