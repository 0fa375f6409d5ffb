"""The device's own limit: its sustained float32 rate at a workload's shapes.

For each batch size, the products of one training step of the workload
(``Workload.products``: its matrix products and, for a CNN, its
convolutions and their two gradients) run back to back in one
``tf.function``; and one large square product. Each measurement is warmed
up, synchronised before and after, repeated, and summarised by its median.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import time

from . import devices, environment, model, numerics, tfdevice

#: 2: one calibration per workload and device, at that workload's shapes
CALIBRATION_SCHEMA_VERSION = 2
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


def _operation(tf, product: model.Product, dtype: str = "float32"):
    """A thunk that runs ``product`` on random operands of ``dtype`` made once."""

    def normal(shape):
        return tf.cast(tf.random.normal(shape), dtype)

    if product.kind == "matmul":
        m, k, n = product.shape
        a, b = normal([m, k]), normal([k, n])
        return lambda: tf.matmul(a, b)
    batch, side, cin, cout, kernel = product.shape
    x, w = normal([batch, side, side, cin]), normal([kernel, kernel, cin, cout])
    dy, ones = normal([batch, side, side, cout]), [1, 1, 1, 1]
    if product.kind == "conv":
        return lambda: tf.nn.conv2d(x, w, strides=1, padding="SAME")
    if product.kind == "conv_filter":
        return lambda: tf.raw_ops.Conv2DBackpropFilter(
            input=x, filter_sizes=[kernel, kernel, cin, cout], out_backprop=dy, strides=ones, padding="SAME"
        )
    return lambda: tf.raw_ops.Conv2DBackpropInput(
        input_sizes=[batch, side, side, cin], filter=w, out_backprop=dy, strides=ones, padding="SAME"
    )


def workload_rate(tf, workload, batch_size: int, repeats: int, min_seconds: float = _MIN_SECONDS, dtype="float32"):
    """The rate of the products of one training step of ``workload`` at
    ``batch_size`` in ``dtype`` (the device's precision), run back to back in
    one compiled function (call it inside ``tf.device``)."""
    products = workload.products(batch_size)
    operations = [_operation(tf, p, dtype) for p in products]

    @tf.function
    def step_products():
        return [op() for op in operations]

    result = _rate(tf, step_products, workload.matmul_flops(batch_size), repeats, min_seconds)
    result["products"] = [[p.kind, *p.shape] for p in products]
    result["dtype"] = dtype
    return result


def numpy_rate(workload: model.Workload, batch_size: int, repeats: int, min_seconds: float = _MIN_SECONDS):
    """The same matrix products through NumPy's BLAS (float32), for CPU
    devices: when NumPy is much faster than TensorFlow at these shapes, the
    framework, not the hardware, is the limit. None for a workload with
    convolutions (NumPy has none to compare). NumPy must be imported after
    :func:`tfdevice.prepare_environment`, which sets its BLAS thread count."""
    import numpy as np

    products = workload.products(batch_size)
    if any(p.kind != "matmul" for p in products):
        return None
    rng = np.random.default_rng(0)
    operands = [
        (rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32))
        for m, k, n in (p.shape for p in products)
    ]

    def step_products():
        return [a @ b for a, b in operands]

    result = _rate(None, step_products, workload.matmul_flops(batch_size), repeats, min_seconds)
    result["blas_threads"] = os.environ.get("OPENBLAS_NUM_THREADS")
    return result


def measure(spec: dict, workload_spec: dict, batch_sizes: list[int], square_size: int, repeats: int, log=print):
    """The calibration record of one device at one workload's shapes."""
    tf, tl, device_name, gpu = tfdevice.open_device(spec)
    workload, dtype = model.of(workload_spec), numerics.compute_dtype(spec.get("precision", "float32"))
    out = {"schema_version": CALIBRATION_SCHEMA_VERSION, "device_spec": dict(spec), "dtype": dtype,
           "workload_spec": dict(workload_spec), "repeats": repeats, "started_at": _now()}  # fmt: skip
    with tf.device(device_name):
        by_batch = {}
        for bs in batch_sizes:
            result = workload_rate(tf, workload, bs, repeats, dtype=dtype)
            by_batch[str(bs)] = result
            log(f"batch {bs}: {result['flops_per_s_median'] / 1e9:.1f} GFLOP/s in {dtype} at the shapes of "
                f"{workload.words()}")  # fmt: skip
            with_numpy = devices.of(spec).compares_with_numpy and dtype == "float32"  # NumPy has no bfloat16
            numpy = numpy_rate(workload, bs, repeats) if with_numpy else None
            if numpy:
                result["numpy"] = numpy
                log(f"batch {bs}: {numpy['flops_per_s_median'] / 1e9:.1f} GFLOP/s through NumPy's BLAS")
        n = square_size
        a, b = tf.cast(tf.random.normal([n, n]), dtype), tf.cast(tf.random.normal([n, n]), dtype)
        square = _rate(tf, tf.function(lambda: tf.matmul(a, b)), 2 * n**3, repeats)
        square["size"] = n
        log(f"square {n}: {square['flops_per_s_median'] / 1e9:.1f} GFLOP/s")
    out.update(workload_shapes=by_batch, square=square, finished_at=_now())
    out["environment"] = environment.capture(tf, tl, spec, gpu, device_name)
    return out
