"""One timed training run; writes its record only when it completed."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup import records, tfdevice, trainer
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    spec = trainer.RunSpec(**snakemake.params.run)
    log(f"training run: {spec.name()}")
    with tfdevice.timing_lock(log) as waited_s:
        record = trainer.run(spec, snakemake.input.data, log=log)
    record["lock_wait_s"] = waited_s
    record["training_code"] = snakemake.params.code
    records.write_json_atomic(snakemake.output[0], record)
    log(f"wrote {snakemake.output[0]}")
