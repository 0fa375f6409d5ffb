"""One timed training run; writes its record only when it completed."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup import devices, progress, records, tfdevice, trainer
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    spec = trainer.RunSpec(**snakemake.params.run)
    log(f"training run: {spec.name()}")
    npz = Path(snakemake.params.npz)
    if not npz.exists():
        raise FileNotFoundError(
            f"{npz} is missing (training depends on its digest file only). "
            f"Fix: run `snakemake {npz}` or the whole workflow, which makes it again first."
        )
    with tfdevice.timing_lock(log) as waited_s:
        record = trainer.run(spec, npz, log=log)
    record["lock_wait_s"] = waited_s
    record["training_code"] = snakemake.params.code
    record["data_digest"] = snakemake.params.data
    out = Path(snakemake.output[0])
    records.write_record(out, record)
    log(f"wrote {out}")
    label = f"{spec.device} ({devices.describe(spec.device_spec, record['environment'].get('gpu_name'))})"
    log.console(progress.line(record, label, out.parents[2]))
