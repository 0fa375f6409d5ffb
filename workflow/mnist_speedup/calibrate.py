"""The device's own limit: sustained float32 matrix-multiply rate.

For each batch size, the eight matrix products of one training step of the
MLP (``model.layer_matmul_shapes``) run back to back in one ``tf.function``;
and one large square product. Each measurement is warmed up, synchronised
before and after, repeated, and summarised by its median.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import time

from . import devices, environment, model, tfdevice

CALIBRATION_SCHEMA_VERSION = 1
_MIN_SECONDS = 0.2  # one repeat runs the product at least this long


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _rate(tf, fn, flops: int, repeats: int, min_seconds: float = _MIN_SECONDS) -> dict:
    """Median FLOP/s of ``fn`` over ``repeats`` (``tf`` None: no device to synchronise)."""

    def sync():
        if tf is not None:
            tfdevice.sync(tf)

    fn()  # trace and warm up
    sync()
    # inner iterations so that one repeat lasts long enough for the clock
    t0 = time.perf_counter()
    fn()
    sync()
    once = max(time.perf_counter() - t0, 1e-6)
    inner = max(1, int(min_seconds / once))
    rates = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        rates.append(flops * inner / (time.perf_counter() - t0))
    return {
        "flops_per_s_median": statistics.median(rates),
        "flops_per_s_all": rates,
        "inner_iterations": inner,
    }


def mlp_rate(tf, batch_size: int, repeats: int, min_seconds: float = _MIN_SECONDS) -> dict:
    """The rate of the eight matrix products of one training step at
    ``batch_size``, run back to back in one compiled function (call it
    inside ``tf.device``)."""
    shapes = model.layer_matmul_shapes(batch_size)
    operands = [(tf.random.normal([m, k]), tf.random.normal([k, n])) for m, k, n in shapes]

    @tf.function
    def step_products():
        return [tf.matmul(a, b) for a, b in operands]

    result = _rate(tf, step_products, model.matmul_flops(batch_size), repeats, min_seconds)
    result["shapes_mkn"] = [list(s) for s in shapes]
    return result


def numpy_rate(batch_size: int, repeats: int, min_seconds: float = _MIN_SECONDS) -> dict:
    """The same eight products through NumPy's BLAS (float32), for CPU
    devices: when NumPy is much faster than TensorFlow at these shapes, the
    framework, not the hardware, is the limit. NumPy must be imported after
    :func:`tfdevice.prepare_environment`, which sets its BLAS thread count."""
    import numpy as np

    rng = np.random.default_rng(0)
    operands = [
        (rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32))
        for m, k, n in model.layer_matmul_shapes(batch_size)
    ]

    def step_products():
        return [a @ b for a, b in operands]

    result = _rate(None, step_products, model.matmul_flops(batch_size), repeats, min_seconds)
    result["blas_threads"] = os.environ.get("OPENBLAS_NUM_THREADS")
    return result


def measure(spec: dict, batch_sizes: list[int], square_size: int, repeats: int, log=print) -> dict:
    tf, tl, device_name, gpu = tfdevice.open_device(spec)
    out = {"schema_version": CALIBRATION_SCHEMA_VERSION, "device_spec": dict(spec), "repeats": repeats}
    out["started_at"] = _now()
    with tf.device(device_name):
        by_batch = {}
        for bs in batch_sizes:
            result = mlp_rate(tf, bs, repeats)
            by_batch[str(bs)] = result
            log(f"batch {bs}: {result['flops_per_s_median'] / 1e9:.1f} GFLOP/s at the MLP's shapes")
            if devices.of(spec).compares_with_numpy:
                result["numpy"] = numpy_rate(bs, repeats)
                log(f"batch {bs}: {result['numpy']['flops_per_s_median'] / 1e9:.1f} GFLOP/s through NumPy's BLAS")
        n = square_size
        a, b = tf.random.normal([n, n]), tf.random.normal([n, n])
        square = _rate(tf, tf.function(lambda: tf.matmul(a, b)), 2 * n**3, repeats)
        square["size"] = n
        log(f"square {n}: {square['flops_per_s_median'] / 1e9:.1f} GFLOP/s")
    out.update(mlp_shapes=by_batch, square=square, finished_at=_now())
    out["environment"] = environment.capture(tf, tl, spec, gpu, device_name)
    return out
