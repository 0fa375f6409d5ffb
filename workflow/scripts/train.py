"""One timed training run; writes its record only when it completed (or, cut by the
time budget, a note where the record would be: records/cuts.py)."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))

from mnist_speedup.measure import budget, hostlock, progress, record, trainer
from mnist_speedup.records import cuts, seal
from mnist_speedup.rulescript import logged
from mnist_speedup.spec import devices, run

with logged(snakemake) as log:
    spec = run.RunSpec(**snakemake.params.run)
    log(f"training run: {spec.name()}")
    npz = Path(snakemake.params.npz)
    if not npz.exists():
        raise FileNotFoundError(
            f"{npz} is missing (training depends on its digest file only). "
            f"Fix: run `snakemake {npz}` or the whole workflow, which makes it again first."
        )
    out = Path(snakemake.output[0])
    with hostlock.timing_lock(log) as waited_s:
        why = budget.cut(spec, run.results_dir_of(out), time.time())
        if why is None:
            measured = trainer.run(spec, npz, log=log)
    if why is not None:  # the time budget: a note where the record would be, and no run
        cuts.write(out, snakemake.params.run, **why)
        line = progress.cut_line(spec, why)
        log(f"wrote {out}: {line}")
        log.console(line)
    else:
        sealed = record.make_record(
            spec, measured, lock_wait_s=waited_s, training_code=snakemake.params.code, data_digest=snakemake.params.data
        )
        seal.write_json_atomic(out, sealed)
        log(f"wrote {out}")
        label = f"{spec.device} ({devices.describe(spec.device_spec, sealed['environment'].get('gpu_name'))})"
        log.console(progress.line(sealed, label, run.results_dir_of(out)))
