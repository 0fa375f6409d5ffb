"""Measure the device's sustained rate at one workload's shapes."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from mnist_speedup.spec import devices

# thread counts for NumPy's BLAS and hidden GPUs, before NumPy or a framework is imported
devices.prepare_environment(snakemake.params.device_spec)

from mnist_speedup.measure import calibrate, hostlock  # noqa: E402
from mnist_speedup.records import calibration, seal  # noqa: E402
from mnist_speedup.rulescript import logged  # noqa: E402

with logged(snakemake) as log:
    spec = snakemake.params.device_spec
    with hostlock.timing_lock(log):
        result = calibrate.measure(
            spec,
            snakemake.params.workload_spec,
            snakemake.params.batch_sizes,
            snakemake.params.square_size,
            snakemake.params.repeats,
            log=log,
        )
    result.update(
        schema_version=calibration.SCHEMA_VERSION,
        device=snakemake.wildcards.device,
        workload=snakemake.wildcards.workload,
        code=snakemake.params.code,
    )
    seal.write_sealed(snakemake.output[0], result)
