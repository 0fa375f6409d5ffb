"""The whole environment of a run, recorded in its JSON (benchopt style)."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import socket
import subprocess

from mnist_speedup.spec import frameworks, precisions
from mnist_speedup.spec.platforms import ACCELERATOR_FIELDS


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
    """nvidia-smi's answer for the card CUDA numbers ``index`` (by its UUID where
    nvidia-smi lists one: its own -i numbering ignores CUDA_VISIBLE_DEVICES)."""
    from mnist_speedup.spec import gpus

    card = gpus.gpu_uuid(index) or str(index)
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader", "-i", card],
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


#: CPU flags of low-precision arithmetic: those the precisions run natively with, and AMX tiles and VNNI
LOW_PRECISION_FLAGS = (
    *dict.fromkeys(f for p in precisions.PRECISIONS.values() for f in (p.cpu_flags or ())),
    "amx_tile",
    "avx_vnni",
)


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


def gpu_driver(index: int | None) -> str | None:
    """The NVIDIA driver's version, as nvidia-smi reports it for GPU ``index``."""
    return _nvidia_smi("driver_version", index or 0)


def gpu_name(index: int | None) -> str | None:
    return _nvidia_smi("name", index or 0)


def framework_fields() -> tuple[str, ...]:
    """What every framework's environment names (null where it does not apply): the framework,
    every declared framework's software (spec/frameworks.py), the accelerator's fields."""
    return ("framework", *frameworks.own_software(), *ACCELERATOR_FIELDS)


def capture(framework) -> dict:
    """The whole environment of a job on an opened framework: the host,
    then the framework's versions and the accelerator it sees."""
    env = host_environment(framework.device.recorded_threads())
    env.update(dict.fromkeys(framework_fields()))
    env["framework"] = framework.name
    env.update(framework.environment())
    if framework.device.platform.accelerator:
        from mnist_speedup.measure import cudalibs
        from mnist_speedup.spec import gpus

        env["gpu_uuid"] = gpus.gpu_uuid(framework.device.index)  # the card NVML's meters read
        env.update(loaded_cuda(env, cudalibs.versions()))
    return env


def loaded_cuda(env: dict, loaded: dict) -> dict:
    """The CUDA library versions as the loaded libraries report them; where
    one is not loaded, what the framework says of its build, marked so."""
    return {
        field: version or (f"{env[field]} (build)" if env.get(field) else None) for field, version in loaded.items()
    }
