"""PyTorch, eager or with torch.compile, behind the seam.

Opening, before ``import torch``'s first CUDA call: a CPU device sets the
intra-op threads to its ``threads`` and the inter-op threads to 1 (the
training step has no independent operators to overlap; more would be threads
beyond the device's cores), and hides the GPUs; a GPU device opens
``cuda:<index>`` (CUDA numbers the cards as nvidia-smi does). ``float32``
turns TF32 off for both matrix products and cuDNN (PyTorch leaves cuDNN's TF32
on by default); ``tf32`` turns both on. ``deterministic`` asks for
deterministic algorithms (and cuBLAS's fixed workspace).

The device's ``mode`` (framework.yaml; training.py): ``eager``, ``fused``,
``compiled`` (``jit_compile: true`` says the same: the network's forward and
backward through ``torch.compile``) or ``captured`` (the whole step as one
graph). Compiled modes use static shapes; the warm-up compiles outside the
clock and a recompilation inside an epoch is an error, not a silent fallback.
Inductor's cache is shared by every run of one machine
(MNIST_SPEEDUP_TORCH_CACHE overrides the folder); the record says whether it
was cold or warm, from Inductor's own counters.
"""

from __future__ import annotations

import os
from pathlib import Path

from mnist_speedup.measure.frameworks.base import DeviceError, Framework, NoDeviceMemory
from mnist_speedup.measure.frameworks.pytorch import numerics
from mnist_speedup.measure.frameworks.pytorch.training import TorchTraining
from mnist_speedup.spec import frameworks, precisions

#: where torch.compile keeps its compiled kernels between the runs' processes (the variable overrides)
CACHE_VARIABLE = "MNIST_SPEEDUP_TORCH_CACHE"


class PyTorch(Framework):
    name = "pytorch"
    optimizer = (
        "torch.optim.Adam (PyTorch's own update: epsilon added to the bias-corrected second moment, "
        "where TensorFlow's fused kernel adds it before the correction)"
    )

    def __init__(self, device_spec: dict, *, deterministic: bool = False, seed: int | None = None):
        super().__init__(device_spec, deterministic=deterministic, seed=seed)
        if deterministic:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        self.mode = frameworks.declarations()[self.name].mode_of(device_spec)
        self.compile = self.mode in ("compiled", "captured")
        self.graphs = (None, None)  # the captured mode's graphs and graph breaks (capture.py), once built
        self.compile_cache = _use_compile_cache() if self.compile else None
        import torch
        import torch._dynamo  # noqa: F401  (torch.optim imports it at its first optimizer: 1.6 s, an import)
        from torch._dynamo.utils import counters

        self.cache_counted_from = dict(counters["inductor"])  # this run's compilations are counted from here

        self.torch = torch
        self.out_of_memory = (torch.cuda.OutOfMemoryError,)
        self.target = self.open_platform(torch)
        tf32 = precisions.of(self.precision).tensor_float_32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
        if deterministic:
            torch.use_deterministic_algorithms(True)
        if seed is not None:
            torch.manual_seed(seed)

    opens = {"cpu": "_cpu", "cuda": "_cuda"}

    def _cpu(self, torch):
        torch.set_num_threads(self.device.threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # a process that already ran PyTorch (a test) keeps its pool; the record says which
            pass
        return torch.device("cpu")

    def _cuda(self, torch):
        index = self.device.index
        if not torch.cuda.is_available():
            raise DeviceError(
                f"a GPU (index {index}) was requested but PyTorch sees no GPU (torch {torch.__version__}, built "
                f"with CUDA {torch.version.cuda}). Fix: install a CUDA build of torch (pip install -e '.[pytorch]') "
                "on a machine with an NVIDIA driver, or remove the gpu device from `devices`."
            )
        count = torch.cuda.device_count()
        if index >= count:
            raise DeviceError(
                f"GPU index {index} does not exist: PyTorch sees {count} GPU(s), indices "
                f"0..{count - 1}. Fix: set devices.<label>.index to one of those."
            )
        torch.cuda.set_device(index)
        return torch.device("cuda", index)

    def sync(self, _result=None) -> None:
        if self.target.type == "cuda":
            self.torch.cuda.synchronize(self.target)

    def training(self, spec, data, steps, setup):
        return TorchTraining(self, spec, data, steps, setup)

    def product_rate_function(self, products, dtype: str):
        thunks = [numerics.product(self.torch, p, self.target, dtype) for p in products]
        return (lambda: [run() for run in thunks]), self.sync

    def square_rate_function(self, n: int, dtype: str):
        a, b = numerics.operands(self.torch, [(n, n), (n, n)], self.target, dtype)
        return (lambda: a @ b), self.sync

    def memory_reader(self):
        return TorchGpuMemory(self.torch, self.target) if self.target.type == "cuda" else NoDeviceMemory()

    def environment(self) -> dict:
        from mnist_speedup.measure import environment

        torch = self.torch
        env = {
            "torch": torch.__version__,
            "torch_cuda": torch.version.cuda,
            "torch_cudnn": str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else None,
            "torch_intra_op_threads": torch.get_num_threads(),
            "torch_inter_op_threads": torch.get_num_interop_threads(),
            "torch_omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "torch_matmul_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "torch_cudnn_tf32": bool(torch.backends.cudnn.allow_tf32),
            "torch_device": str(self.target),
            "torch_compile": self.compile_state(),
            "torch_compile_cache": self.compile_cache,
            "torch_mode": self.mode,
            "torch_graphs": self.graphs[0],
            "torch_graph_breaks": self.graphs[1],
        }
        if self.target.type == "cuda":
            index = self.device.index
            major, minor = torch.cuda.get_device_capability(self.target)
            env.update(
                gpu_name=torch.cuda.get_device_name(self.target),
                gpu_compute_capability=f"{major}.{minor}",
                gpu_driver=environment.gpu_driver(index),
                cuda_version=torch.version.cuda,
                cudnn_version=env["torch_cudnn"],
            )
        return env

    def compile_state(self) -> str:
        """``off``, or what torch.compile's graphs found in Inductor's FX graph cache, from its own counters:
        ``warm`` when every graph was loaded from it, ``cold`` when none was (a file that fails to load is a
        miss), ``partial (h of n)`` between; ``none`` where nothing was compiled yet."""
        if not self.compile:
            return "off"
        from torch._dynamo.utils import counters

        found = counters["inductor"]
        hits, *compiled = (found[k] - self.cache_counted_from.get(k, 0) for k in _GRAPH_CACHE)
        misses = sum(compiled)
        if hits + misses == 0:
            return "none"
        return "warm" if misses == 0 else "cold" if hits == 0 else f"partial ({hits} of {hits + misses})"


#: Inductor's counters of FX graphs loaded from its cache, then of those compiled (a bypass compiles too)
_GRAPH_CACHE = ("fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass")


def _use_compile_cache() -> str:
    """Inductor's and Triton's caches in one folder per torch version, shared by the runs of this
    machine: the folder."""
    from importlib import metadata

    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        version = "unknown"
    folder = os.environ.get(CACHE_VARIABLE) or str(Path.home() / ".cache" / "mnist-speedup" / f"torch-{version}")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
    os.environ.setdefault("TRITON_CACHE_DIR", str(Path(folder) / "triton"))
    return folder


class TorchGpuMemory:
    """Peak bytes PyTorch's allocator held on the GPU from construction on (the timed epochs)."""

    def __init__(self, torch, target):
        self.torch, self.target = torch, target
        torch.cuda.reset_peak_memory_stats(target)

    def peak(self) -> dict:
        return {"gpu_peak_bytes": int(self.torch.cuda.max_memory_allocated(self.target)), "gpu_reason": None}


#: this folder's framework (measure/frameworks/__init__.py finds it here)
FRAMEWORK = PyTorch
