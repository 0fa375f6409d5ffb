"""The device's own limit: its sustained rate at a workload's shapes, in the device's precision.

For each batch size, the products of one training step of the workload
(``Workload.products``: its matrix products and, for a CNN, its
convolutions and their two gradients) run back to back in one compiled
function of the device's framework; and one large square product. Each measurement is warmed
up, synchronised before and after, repeated, and summarised by its median.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import time

from mnist_speedup.measure import environment, frameworks
from mnist_speedup.spec import devices, precisions, workloads

_MIN_SECONDS = 0.2  # one repeat runs the product at least this long


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _rate(fn, flops: int, repeats: int, min_seconds: float = _MIN_SECONDS, sync=lambda _result: None) -> dict:
    """Median FLOP/s of ``fn`` over ``repeats``; ``sync(result)`` waits for the device."""
    sync(fn())  # compile and warm up
    # inner iterations so that one repeat lasts long enough for the clock
    t0 = time.perf_counter()
    sync(fn())
    once = max(time.perf_counter() - t0, 1e-6)
    inner = max(1, int(min_seconds / once))
    rates = []
    for _ in range(repeats):
        sync(None)
        t0 = time.perf_counter()
        for _ in range(inner):
            result = fn()
        sync(result)
        rates.append(flops * inner / (time.perf_counter() - t0))
    return {
        "flops_per_s_median": statistics.median(rates),
        "flops_per_s_all": rates,
        "inner_iterations": inner,
    }


def workload_rate(
    framework, workload, batch_size: int, repeats: int, min_seconds: float = _MIN_SECONDS, dtype="float32"
):
    """The rate of the products of one training step of ``workload`` at
    ``batch_size`` in ``dtype`` (the device's precision), run back to back in
    one compiled function of the opened ``framework``."""
    products = workload.products(batch_size)
    fn, sync = framework.product_rate_function(products, dtype)
    result = _rate(fn, workload.matmul_flops(batch_size), repeats, min_seconds, sync)
    result["products"] = [[p.kind, *p.shape] for p in products]
    result["dtype"] = dtype
    return result


def numpy_rate(workload: workloads.Workload, batch_size: int, repeats: int, min_seconds: float = _MIN_SECONDS):
    """The same products through NumPy's BLAS (float32), for CPU
    devices: when NumPy is much faster than TensorFlow at these shapes, the
    framework, not the hardware, is the limit. None for a workload with
    convolutions (NumPy has none to compare). NumPy must be imported after
    :func:`frameworks.prepare_environment`, which sets its BLAS thread count."""
    import numpy as np

    products = workload.products(batch_size)
    if workload.has_convolutions():
        return None
    rng = np.random.default_rng(0)
    kinds = [p.of_kind for p in products]
    operands = [
        [rng.standard_normal(shape, dtype=np.float32) for shape in kind.operand_shapes(p.shape)]
        for kind, p in zip(kinds, products)
    ]

    def step_products():
        return [ops[0] @ ops[1] if k.matmul_form else np.einsum(k.einsum, *ops) for k, ops in zip(kinds, operands)]

    result = _rate(step_products, workload.matmul_flops(batch_size), repeats, min_seconds)
    result["blas_threads"] = os.environ.get("OPENBLAS_NUM_THREADS")
    return result


def measure(spec: dict, workload_spec: dict, batch_sizes: list[int], square_size: int, repeats: int, log=print):
    """What a calibration measures of one device at one workload's shapes (the
    rule script adds the schema version and names: records/calibration.py)."""
    framework = frameworks.open_device(spec)
    workload, dtype = workloads.of(workload_spec), precisions.compute_dtype(precisions.name_of(spec))
    out = {
        "device_spec": dict(spec),
        "dtype": dtype,
        "workload_spec": dict(workload_spec),
        "repeats": repeats,
        "started_at": _now(),
    }
    by_batch = {}
    for bs in batch_sizes:
        result = workload_rate(framework, workload, bs, repeats, dtype=dtype)
        by_batch[str(bs)] = result
        log(
            f"batch {bs}: {result['flops_per_s_median'] / 1e9:.1f} GFLOP/s in {dtype} at the shapes of "
            f"{workload.words()} ({framework.declaration.words})"
        )
        with_numpy = devices.of(spec).compares_with_numpy and dtype == "float32"  # NumPy has no bfloat16
        numpy = numpy_rate(workload, bs, repeats) if with_numpy else None
        if numpy:
            result["numpy"] = numpy
            log(f"batch {bs}: {numpy['flops_per_s_median'] / 1e9:.1f} GFLOP/s through NumPy's BLAS")
    n = square_size
    fn, sync = framework.square_rate_function(n, dtype)
    square = _rate(fn, 2 * n**3, repeats, sync=sync)
    square["size"] = n
    log(f"square {n}: {square['flops_per_s_median'] / 1e9:.1f} GFLOP/s")
    out.update(workload_shapes=by_batch, square=square, finished_at=_now())
    out["environment"] = environment.capture(framework)
    return out
