"""One timed training run: its record, then its attempt (records/attempts.py); cut by the time budget,
only an attempt that says why."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))

from mnist_speedup.measure import budget, hostlock, invocation, progress, record, trainer
from mnist_speedup.records import attempts, derived, seal
from mnist_speedup.rulescript import logged
from mnist_speedup.spec import devices, run

with logged(snakemake) as log:
    spec = run.RunSpec(**snakemake.params.run)
    log(f"training run: {spec.name()} (attempt {snakemake.params.attempt})")
    npz = Path(snakemake.params.npz)
    if not npz.exists():
        raise FileNotFoundError(
            f"{npz} is missing (training depends on its digest file only). "
            f"Fix: run `snakemake {npz}` or the whole workflow, which makes it again first."
        )
    out, record_path = Path(snakemake.output[0]), Path(snakemake.params.record)
    call, why_not = invocation.current(snakemake.params.invocation)
    if call is None:
        log(f"no time budget and no progress counts: {why_not}")
    with hostlock.timing_lock(log) as waited_s:
        why = budget.cut(spec, call, time.time())
        # an earlier attempt's record goes, as Snakemake removes a rerun job's outputs
        record_path.unlink(missing_ok=True)
        if why is None:
            measured = trainer.run(spec, npz, log=log)
    if why is not None:  # the time budget: an attempt that says why, and no run
        attempts.write_cut(out, snakemake.params.run, snakemake.params.attempt, why)
        line = progress.cut_line(spec, why)
        log(f"wrote {out}: {line}")
        log.console(line)
    else:
        sealed = record.make_record(
            spec, measured, lock_wait_s=waited_s, training_code=snakemake.params.code, data_digest=snakemake.params.data
        )
        seal.write_json_atomic(record_path, sealed)
        attempts.write_finished(out, snakemake.params.attempt)
        log(f"wrote {record_path} and {out}")
        label = f"{spec.device} ({devices.describe(spec.device_spec, sealed['environment'].get('gpu_name'))})"
        log.console(progress.line(derived.derive(sealed), label, call))
