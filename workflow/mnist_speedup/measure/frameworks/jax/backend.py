"""JAX with optax: the same networks, compiled by XLA, behind the seam.

Opening, before ``import jax``: a CPU device pins the process to its
``threads`` cores (XLA's CPU thread pool sizes itself from the cores the
process may use, so N cores means N threads, measured in the tests) and
hides the GPUs; a GPU device makes JAX allocate on demand (so that its
peak memory means something). ``deterministic`` sets XLA's flag for
deterministic GPU reductions. ``float32`` sets the default matmul precision
to ``highest`` (on a GPU JAX's default rounds float32 products' inputs to
TF32 or bfloat16); the record says so.

Training: the state (weights, Adam's moments, the dropout key, the loss
scaling, the step count) is one pytree; an epoch is one jitted call of a
``lax.fori_loop`` over batches gathered on the device (``steps_per_call``
cuts it into calls; ``input_pipeline: host`` copies each batch from host
memory). JAX is functional, so the warm-up runs a real step on the state
and throws the result away: the weights stay the initial ones.
"""

from __future__ import annotations

import os
from pathlib import Path

from mnist_speedup.measure.frameworks.base import DeviceError, Framework, NoDeviceMemory
from mnist_speedup.measure.frameworks.jax.training import JaxTraining
from mnist_speedup.spec import precisions


class Jax(Framework):
    name = "jax"
    optimizer = "Adam as TensorFlow's fused kernel updates (epsilon hat), an optax GradientTransformation"

    def __init__(self, device_spec: dict, *, deterministic: bool = False, seed: int | None = None):
        super().__init__(device_spec, deterministic=deterministic, seed=seed)
        self.open_platform("before_import")
        if deterministic:
            os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_gpu_deterministic_ops=true").strip()
        import jax

        self.jax = jax
        self.compilation_cache = _use_compilation_cache(jax)
        self.cache_counts = _cache_counter(jax)  # what this process's compilations found in the cache
        self.cache_counted_from = dict(self.cache_counts)
        precision = precisions.of(self.precision)
        # float32 means float32 (JAX's GPU default is not); TF32 where asked; mixed: the cast decides
        self.matmul_precision = (
            "tensorfloat32" if precision.tensor_float_32 else "default" if precision.casts else "highest"
        )
        jax.config.update("jax_default_matmul_precision", self.matmul_precision)
        self.out_of_memory = (getattr(jax.errors, "JaxRuntimeError", RuntimeError),)
        self.target = self.open_platform("open", jax)
        jax.config.update("jax_default_device", self.target)

    opens = {"cpu": "_cpu", "cuda": "_cuda"}

    def _cpu(self, stage: str, jax=None):
        """Before the import: JAX on the CPU alone, on the device's cores; then its CPU device."""
        if stage == "before_import":
            os.environ["JAX_PLATFORMS"] = "cpu"
            os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: self.device.threads])
            return None
        return jax.devices("cpu")[0]

    def _cuda(self, stage: str, jax=None):
        """Before the import: memory taken as needed (not 75% of the card at once); then the card."""
        if stage == "before_import":
            os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
            return None
        index = self.device.index
        try:
            gpus = jax.devices("gpu")
        except RuntimeError:
            gpus = []
        if not gpus:
            raise DeviceError(
                f"a GPU (index {index}) was requested but JAX sees no GPU (jax {jax.__version__}, backend "
                f"{jax.default_backend()}). Fix: install JAX with its CUDA plugin (pip install 'jax[cuda12]') on a "
                "machine with an NVIDIA driver, or remove the gpu device from `devices`."
            )
        if index >= len(gpus):
            raise DeviceError(
                f"GPU index {index} does not exist: JAX sees {len(gpus)} GPU(s), indices "
                f"0..{len(gpus) - 1}. Fix: set devices.<label>.index to one of those."
            )
        return gpus[index]

    def put(self, value):
        return self.jax.device_put(value, self.target)

    def training(self, spec, data, steps, setup):
        return JaxTraining(self, spec, data, steps, setup)

    def _operands(self, shapes, dtype):
        """Random operands made once, by NumPy (JAX's generator is slow on a CPU), in ``dtype`` on the device."""
        import numpy as np

        rng = np.random.default_rng(0)
        return [self.put(rng.standard_normal(shape, dtype=np.float32)).astype(dtype) for shape in shapes]

    def product_rate_function(self, products, dtype: str):
        jax, lax = self.jax, self.jax.lax
        dims = ("NHWC", "HWIO", "NHWC")
        operands, kinds = [], []
        for p in products:
            if p.of_kind.einsum is not None:
                operands.append(self._operands(p.of_kind.operand_shapes(p.shape), dtype))
            else:
                b, side, cin, cout, kernel = p.shape
                operands.append(
                    self._operands([(b, side, side, cin), (kernel, kernel, cin, cout), (b, side, side, cout)], dtype)
                )
            kinds.append(p.of_kind)

        def conv(x, w):
            return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dims)

        def one(kind, ops):
            if kind.einsum is not None:  # any sum: the framework needs no code for a new kind
                return ops[0] @ ops[1] if kind.matmul_form else jax.numpy.einsum(kind.einsum, *ops)
            x, w, dy = ops
            if kind.name == "conv":
                return conv(x, w)
            if kind.name == "conv_filter":
                return jax.vjp(lambda w_: conv(x, w_), w)[1](dy)[0]
            return jax.vjp(lambda x_: conv(x_, w), x)[1](dy)[0]

        compiled = jax.jit(lambda ops: [one(k, o) for k, o in zip(kinds, ops)])
        return (lambda: compiled(operands)), self._block

    def square_rate_function(self, n: int, dtype: str):
        a, b = self._operands([(n, n), (n, n)], dtype)
        compiled = self.jax.jit(lambda a, b: a @ b)
        return (lambda: compiled(a, b)), self._block

    def _block(self, result) -> None:
        if result is not None:
            self.jax.block_until_ready(result)

    def memory_reader(self):
        return JaxGpuMemory(self.target) if self.device.platform.accelerator else NoDeviceMemory()

    def environment(self) -> dict:
        from importlib import metadata

        from mnist_speedup.measure import environment

        jax, target = self.jax, self.target
        env = {
            "jax": jax.__version__,
            "jaxlib": _version(metadata, "jaxlib"),
            "optax": _version(metadata, "optax"),
            "jax_backend": target.platform,
            "jax_device": str(target),
            "jax_matmul_precision": self.matmul_precision,
            "jax_cpu_cores": len(os.sched_getaffinity(0)),
            "jax_compilation_cache": self.compilation_cache,
            "jax_compilation_cache_state": self.cache_state(),
        }
        index = self.device.index
        if self.device.platform.accelerator:
            cc = getattr(target, "compute_capability", None)
            env.update(
                gpu_name=getattr(target, "device_kind", None) or environment.gpu_name(index),
                gpu_compute_capability=str(cc) if cc else None,
                gpu_driver=environment.gpu_driver(index),
                cuda_version=_cuda_version(metadata),
            )
        return env

    def cache_state(self) -> str:
        """Whether this run's compilations were loaded from the cache, from JAX's own counters: ``warm`` when
        every one was, ``cold`` when none was (a file that fails to load counts as a miss), ``partial (h of
        n)`` between; ``none`` where nothing was compiled."""
        hits, requests = (self.cache_counts[k] - self.cache_counted_from[k] for k in (_HITS, _REQUESTS))
        if requests == 0:
            return "none"
        return "warm" if hits == requests else "cold" if hits == 0 else f"partial ({hits} of {requests})"


#: where compiled functions are kept between the runs' processes (the environment variable overrides)
CACHE_VARIABLE = "MNIST_SPEEDUP_JAX_CACHE"
#: JAX's events for a compilation that asked the persistent cache, and for one the cache answered
_REQUESTS, _HITS = "/jax/compilation_cache/compile_requests_use_cache", "/jax/compilation_cache/cache_hits"
_COUNTS: dict[str, int] = {}


def _cache_counter(jax) -> dict[str, int]:
    """The process's counts of the cache's events (one listener per process, registered on first use)."""
    if not _COUNTS:
        _COUNTS.update({_REQUESTS: 0, _HITS: 0})

        def count(event: str, **kwargs) -> None:
            if event in _COUNTS:
                _COUNTS[event] += 1

        jax.monitoring.register_event_listener(count)
    return _COUNTS


def _use_compilation_cache(jax) -> str:
    """Keep XLA's compiled functions (with a GPU's autotuning choices) on
    disk, so that the second and later runs of one setting load them: on an
    H200 each run's process otherwise spent 17-21 s compiling and autotuning
    before its first epoch (JAX 0.11.2), outside the clock but inside the
    machine time a benchmark can afford. Returns the folder."""
    folder = os.environ.get(CACHE_VARIABLE) or str(Path.home() / ".cache" / "mnist-speedup" / f"jax-{jax.__version__}")
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return folder


def _version(metadata, name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _cuda_version(metadata) -> str | None:
    """The CUDA plugin JAX loaded, by its package (jax-cuda12-plugin, jax-cuda13-plugin)."""
    for name in ("jax-cuda13-plugin", "jax-cuda12-plugin"):
        version = _version(metadata, name)
        if version:
            return f"{name} {version}"
    return None


class JaxGpuMemory:
    """Peak bytes JAX's allocator held on the GPU since the process started
    (JAX cannot reset the peak; the data and the compiled functions are in it)."""

    def __init__(self, target):
        self.target = target

    def peak(self) -> dict:
        try:
            stats = self.target.memory_stats() or {}
            return {
                "gpu_peak_bytes": int(stats["peak_bytes_in_use"]),
                "gpu_reason": "peak since the process started (JAX cannot reset it)",
            }
        except (KeyError, TypeError, RuntimeError, AttributeError) as exc:
            return {"gpu_peak_bytes": None, "gpu_reason": f"GPU memory statistics unavailable ({exc})"}


#: this folder's framework (measure/frameworks/__init__.py finds it here)
FRAMEWORK = Jax
