"""Write results/<experiment>/bundle-<host>.tar.gz: this machine's runs and calibrations with a manifest."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup.records import attempts, bundle, signing
from mnist_speedup.records import run_record as records
from mnist_speedup.rulescript import logged

with logged(snakemake) as log:
    params = snakemake.params
    results = Path(snakemake.output.bundle).parent  # results/<experiment>/
    runs, cut = attempts.split(snakemake.input.attempts)  # the records travel; a cut run has none
    files = [*runs, *(Path(f) for f in snakemake.input.calibration)]
    if not runs:
        why = f": the time budget cut all {len(cut)} planned runs" if cut else ""
        raise records.RecordError(
            f"no finished run to bundle{why}. Fix: give time_budget_s more seconds (or leave it out) and run "
            "snakemake again; the bundle carries finished runs only"
        )
    envs = [records.load(path)["environment"] for path in runs]
    env = envs[0]
    meta = bundle.manifest(
        results,
        files,
        host=env["hostname"],
        machine_id=env.get("machine_id"),
        experiment=params.experiment,
        config=params.config,
        software=bundle.software(envs),
        training_code=params.code,
    )
    bundle.write(snakemake.output.bundle, results, meta)
    log(
        f"wrote {snakemake.output.bundle}: {len(files)} files from {env['hostname']}"
        + (f"; {len(cut)} runs cut by the time budget are not in it" if cut else "")
    )
    if params.signing_key:
        log(f"signed it: {signing.sign(snakemake.output.bundle, params.signing_key)}")
