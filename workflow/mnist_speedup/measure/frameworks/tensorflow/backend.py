"""TensorFlow with TensorLayer, as the original article trained: one framework behind the seam.

Opening: thread counts before the runtime starts, one GPU made visible
with memory growth, TF32 off for ``float32`` (TensorFlow runs float32
products in TF32 on compute capability 8.0 and newer unless told not to).
Training: TensorLayer's network, TensorFlow's fused Adam, one
``tf.function`` (``tf.while_loop`` over batches gathered on the device)
per call, mixed precision by casting each layer (tf_numerics.py).
"""

from __future__ import annotations

import os
import re
import warnings

from mnist_speedup.measure.frameworks.base import DeviceError, Framework, NoDeviceMemory
from mnist_speedup.measure.frameworks.tensorflow.training import OPTIMIZER, TfTraining
from mnist_speedup.spec import precisions, workloads


class TensorFlow(Framework):
    name = "tensorflow"
    optimizer = OPTIMIZER

    def __init__(self, device_spec: dict, *, deterministic: bool = False, seed: int | None = None):
        super().__init__(device_spec, deterministic=deterministic, seed=seed)
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf

        self.tf = tf
        self.out_of_memory = (tf.errors.ResourceExhaustedError,)
        self.device_name, self.physical = self.open_platform(tf)
        # float32 means float32: TF32 rounds the products' inputs only where the precision says so
        tf.config.experimental.enable_tensor_float_32_execution(precisions.of(self.precision).tensor_float_32)
        import tensorlayer as tl

        self.tl = tl
        if deterministic:
            tf.config.experimental.enable_op_determinism()
        if seed is not None:
            tf.keras.utils.set_random_seed(seed)  # weights, dropout masks, shuffling

    opens = {"cpu": "_cpu", "cuda": "_cuda"}

    def _cpu(self, tf):
        # must precede anything that initialises the TF runtime (tensorlayer does); a process
        # that already ran TensorFlow (a test) keeps its threads, and the record says which
        try:
            tf.config.threading.set_intra_op_parallelism_threads(self.device.threads)
            tf.config.threading.set_inter_op_parallelism_threads(1)
        except RuntimeError as exc:
            warnings.warn(
                f"TensorFlow was already running in this process; its threads stay as they were ({exc})",
                stacklevel=3,
            )
        return "/CPU:0", None

    def _cuda(self, tf):
        index = self.device.index
        gpus = tf.config.list_physical_devices("GPU")
        if not gpus:
            raise DeviceError(
                f"a GPU (index {index}) was requested but TensorFlow sees no GPU "
                f"(TensorFlow {tf.__version__}, built with CUDA: {tf.test.is_built_with_cuda()}). Fix: install "
                "the GPU extra (pip install -e '.[gpu]', i.e. tensorflow[and-cuda]) on a machine with an "
                "NVIDIA driver, or remove the gpu device from `devices`."
            )
        if index >= len(gpus):
            raise DeviceError(
                f"GPU index {index} does not exist: TensorFlow sees {len(gpus)} GPU(s), "
                f"indices 0..{len(gpus) - 1}. Fix: set devices.<label>.index to one of those."
            )
        tf.config.set_visible_devices([gpus[index]], "GPU")
        tf.config.experimental.set_memory_growth(gpus[index], True)
        return "/GPU:0", gpus[index]

    def sync(self, _result=None) -> None:
        """Wait for all queued device work (a no-op cost on the CPU)."""
        self.tf.test.experimental.sync_devices()

    def training(self, spec, data, steps, setup):
        with self.tf.device(self.device_name):
            return TfTraining(self, spec, data, steps, setup)

    def product_rate_function(self, products, dtype: str):
        tf = self.tf
        with tf.device(self.device_name):
            operations = [_operation(tf, p, dtype) for p in products]

        @tf.function
        def step_products():
            with tf.device(self.device_name):
                return [op() for op in operations]

        return step_products, self.sync

    def square_rate_function(self, n: int, dtype: str):
        tf = self.tf
        with tf.device(self.device_name):
            a, b = tf.cast(tf.random.normal([n, n]), dtype), tf.cast(tf.random.normal([n, n]), dtype)
        return tf.function(lambda: tf.matmul(a, b)), self.sync

    def memory_reader(self):
        return GpuMemory(self.tf, self.device_name) if self.physical is not None else NoDeviceMemory()

    def environment(self) -> dict:
        tf = self.tf
        env = _versions(tf, self.tl, self.physical, self.device.index)
        env["tf32"] = bool(tf.config.experimental.tensor_float_32_execution_enabled())
        env["tf_intra_op_threads"] = tf.config.threading.get_intra_op_parallelism_threads()
        env["tf_inter_op_threads"] = tf.config.threading.get_inter_op_parallelism_threads()
        env["tf_device"] = self.device_name
        return env


def _versions(tf, tl, gpu=None, gpu_index: int | None = None) -> dict:
    """TensorFlow side: versions, build, and the GPU in use (None on CPU)."""
    from mnist_speedup.measure import environment

    build = dict(tf.sysconfig.get_build_info())
    env = {
        "tensorflow": tf.__version__,
        "tensorlayer": tl.__version__,
        "keras": getattr(tf.keras, "__version__", None) or _keras_version(),
        "tf_built_with_cuda": bool(build.get("is_cuda_build", False)),
        "gpu_name": None,
        "gpu_compute_capability": None,
        "gpu_driver": None,
        "cuda_version": None,
        "cudnn_version": None,
    }
    if gpu is not None:
        details = tf.config.experimental.get_device_details(gpu)
        cc = details.get("compute_capability")
        env.update(
            gpu_name=details.get("device_name") or environment.gpu_name(gpu_index),
            gpu_compute_capability=".".join(map(str, cc)) if cc else None,
            gpu_driver=environment.gpu_driver(gpu_index),
            cuda_version=build.get("cuda_version"),
            cudnn_version=build.get("cudnn_version"),
            gpu_ptx_jit=ptx_jit(build.get("cuda_compute_capabilities") or [], cc),
        )
        if env["gpu_ptx_jit"]:
            warnings.warn(env["gpu_ptx_jit"], stacklevel=2)  # TF_CPP_MIN_LOG_LEVEL=2 hides TensorFlow's own
    return env


def ptx_jit(built_for: list[str], cc) -> str | None:
    """Why this GPU's first run compiles PTX for minutes: its compute
    capability is newer than every architecture the wheel has machine code
    for (``sm_XY``); the driver then JIT-compiles the wheel's PTX
    (``compute_XY``), once per machine into its cache."""
    if not cc:
        return None
    have = tuple(int(p) for p in cc)
    sass = [(int(a[3:-1]), int(a[-1])) for a in built_for if re.fullmatch(r"sm_[0-9]{2,3}", a)]
    if not sass or have <= max(sass):
        return None
    newest = max(sass)
    return (
        f"compute capability {have[0]}.{have[1]} is newer than the newest architecture this TensorFlow wheel "
        f"has machine code for ({newest[0]}.{newest[1]}): the first run JIT-compiles its PTX, which takes "
        "minutes and lands outside the clock only if the warm-up covers it; later runs read the driver's cache"
    )


def _keras_version() -> str | None:
    try:
        import keras

        return keras.__version__
    except Exception:  # keras missing or broken: record that we do not know
        return None


def _operation(tf, product: workloads.Product, dtype: str = "float32"):
    """A thunk that runs ``product`` on random operands of ``dtype`` made once."""

    def normal(shape):
        return tf.cast(tf.random.normal(shape), dtype)

    kind = product.of_kind
    if kind.einsum is not None:  # any sum: the framework needs no code for a new kind
        operands = [normal(shape) for shape in kind.operand_shapes(product.shape)]
        if kind.matmul_form:
            return lambda: tf.matmul(*operands)
        return lambda: tf.einsum(kind.einsum, *operands)
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


class GpuMemory:
    """Peak GPU memory allocated by TensorFlow from construction on (the
    timed epochs): ``reset_memory_stats`` then ``get_memory_info``."""

    def __init__(self, tf, device_name: str):
        self.tf, self.device = tf, device_name.strip("/")
        self.reason = None
        try:
            tf.config.experimental.reset_memory_stats(self.device)
        except (ValueError, RuntimeError, AttributeError) as exc:
            self.reason = f"GPU memory statistics unavailable ({exc})"

    def peak(self) -> dict:
        if self.reason is None:
            try:
                return {
                    "gpu_peak_bytes": int(self.tf.config.experimental.get_memory_info(self.device)["peak"]),
                    "gpu_reason": None,
                }
            except (ValueError, RuntimeError, KeyError) as exc:
                self.reason = f"GPU memory statistics unavailable ({exc})"
        return {"gpu_peak_bytes": None, "gpu_reason": self.reason}


#: this folder's framework (measure/frameworks/__init__.py finds it here)
FRAMEWORK = TensorFlow
