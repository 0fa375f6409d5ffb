"""The whole environment of a run, recorded in its JSON (benchopt style)."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import socket
import subprocess


def process_age_s() -> float | None:
    """Seconds since this process started (Linux), e.g. to time interpreter
    start and imports that happen before any of our code runs."""
    try:
        with open("/proc/self/stat", encoding="utf-8") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="utf-8") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def peak_rss_bytes() -> int | None:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    except (ImportError, OSError, ValueError):
        return None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _nvidia_smi(query: str, index: int) -> str | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader", "-i", str(index)],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (subprocess.SubprocessError, OSError):
        return None
    return out or None


def machine_id() -> str:
    """A stable id of this machine beyond its hostname: a digest of
    /etc/machine-id, or of the CPU model and core count where that is
    missing (two VMs called `vm` are then still told apart)."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            text = open(path, encoding="utf-8").read().strip()
        except OSError:
            continue
        if text:
            return hashlib.sha256(text.encode()).hexdigest()[:12]
    return hashlib.sha256(f"{cpu_model()}|{os.cpu_count()}".encode()).hexdigest()[:12]


#: CPU flags of low-precision arithmetic (bfloat16, float16, AMX tiles)
LOW_PRECISION_FLAGS = ("avx512_bf16", "amx_bf16", "avx512_fp16", "amx_fp16", "amx_tile", "avx_vnni")


def cpu_low_precision_flags(cpuinfo="/proc/cpuinfo") -> list[str] | None:
    """Which of LOW_PRECISION_FLAGS the CPU reports (None: no /proc/cpuinfo flags)."""
    try:
        with open(cpuinfo, encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return [f for f in LOW_PRECISION_FLAGS if f in flags]
    except OSError:
        pass
    return None


def host_environment(threads: int | None) -> dict:
    """Everything that does not need TensorFlow."""
    import numpy

    return {
        "hostname": socket.gethostname(),
        "machine_id": machine_id(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "numpy": numpy.__version__,
        "cpu_model": cpu_model(),
        "cpu_low_precision_flags": cpu_low_precision_flags(),
        "logical_cores": os.cpu_count(),
        "threads": threads,
        "env": {
            k: os.environ.get(k)
            for k in (
                "CUDA_VISIBLE_DEVICES",
                "OMP_NUM_THREADS",
                "MKL_NUM_THREADS",
                "TF_ENABLE_ONEDNN_OPTS",
                "TF_DETERMINISTIC_OPS",
                "OPENBLAS_CORETYPE",
            )
        },
    }


def tensorflow_environment(tf, tl, gpu=None, gpu_index: int | None = None) -> dict:
    """TensorFlow side: versions, build, and the GPU in use (None on CPU)."""
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
            gpu_name=details.get("device_name") or _nvidia_smi("name", gpu_index or 0),
            gpu_compute_capability=".".join(map(str, cc)) if cc else None,
            gpu_driver=_nvidia_smi("driver_version", gpu_index or 0),
            cuda_version=build.get("cuda_version"),
            cudnn_version=build.get("cudnn_version"),
        )
    return env


def _keras_version() -> str | None:
    try:
        import keras

        return keras.__version__
    except Exception:  # keras missing or broken: record that we do not know
        return None


def capture(tf, tl, spec: dict, gpu, device_name: str) -> dict:
    """The whole environment of a job on ``spec``: host, TensorFlow side,
    and the thread settings TensorFlow actually uses."""
    from . import devices

    env = host_environment(devices.of(spec).recorded_threads())
    env.update(tensorflow_environment(tf, tl, gpu, spec.get("index")))
    env["tf_intra_op_threads"] = tf.config.threading.get_intra_op_parallelism_threads()
    env["tf_inter_op_threads"] = tf.config.threading.get_inter_op_parallelism_threads()
    env["tf_device"] = device_name
    return env
