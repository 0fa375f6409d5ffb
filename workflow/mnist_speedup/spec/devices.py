"""Devices: their types, and what ``devices: auto`` means, without importing TensorFlow.

A device spec is a plain dict from the config: ``{"type": "cpu", "threads":
N}`` or ``{"type": "gpu", "index": I}``. Each type is one :class:`Device`
subclass, registered in :data:`TYPES`, that says everything that differs
between types: its platform (spec/platforms.py: how a framework opens it, which
meters apply, which environment file installs it), its threads, its process
environment, its card's ``index``, how it is described in words, its cluster
resources and its config checks. Nothing outside this module asks which type a
device is; a new type (an AMD or Apple GPU) is one class here on a new platform
(spec/platforms.py says what else that takes).

GPU detection is gpus.py's (nvidia-smi: fast, no CUDA context).
"""

from __future__ import annotations

import json
import os
import re

from mnist_speedup.spec import frameworks, precisions
from mnist_speedup.spec.gpus import compute_capability, detect_gpus
from mnist_speedup.spec.platforms import PLATFORMS, Platform

LABEL_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
_LABEL_RE = re.compile(LABEL_PATTERN + r"\Z")


def logical_cores() -> int:
    """Cores this process may use (affinity-aware), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def auto_devices(gpus: list[dict] | None = None, cores: int | None = None) -> dict[str, dict]:
    """``devices: auto``: ``cpu`` with every core, one ``gpu<i>`` per GPU
    (``gpu`` if there is only one), and ``cpu1`` when there is no GPU."""
    gpus = detect_gpus() if gpus is None else gpus
    cores = logical_cores() if cores is None else cores
    devices: dict[str, dict] = {"cpu": {"type": "cpu", "threads": cores}}
    if not gpus:
        devices["cpu1"] = {"type": "cpu", "threads": 1}
    for gpu in gpus:
        label = "gpu" if len(gpus) == 1 else f"gpu{gpu['index']}"
        devices[label] = {"type": "gpu", "index": gpu["index"]}
    return devices


def is_safe_label(label: str) -> bool:
    return bool(_LABEL_RE.match(str(label)))


# ------------------------------------------------------------ device types


class Device:
    """One kind of device. A subclass says everything that differs between
    kinds; nothing outside this module asks which kind a device is.

    ``spec`` is the device's config mapping (``type`` plus the kind's own keys)."""

    type: str = ""
    #: what kind of hardware it is: how a framework opens it, its meters, its environment files
    platform: Platform = PLATFORMS["cpu"]
    compares_with_numpy: bool = False  # calibration also times NumPy's BLAS
    compares_threads: bool = False  # its speed should grow with its threads

    def __init__(self, spec: dict):
        self.spec = spec

    @property
    def threads(self) -> int:
        """Cores a job of this device takes."""
        return 1

    def recorded_threads(self) -> int | None:
        return None

    def process_environment(self) -> dict[str, str]:
        """Environment variables to set before a framework is imported."""
        return {}

    @property
    def index(self) -> int | None:
        """The card a framework opens on an accelerator's platform (None: the host)."""
        return None

    @property
    def conda_env(self) -> str:
        """The conda environment of its jobs (relative to workflow/rules/): its framework's for its platform."""
        return frameworks.of(self.spec).environments[self.platform.name]

    def describe(self, gpu_name: str | None = None) -> str:
        raise NotImplementedError

    def resources(self) -> dict:
        """What a cluster job of this device asks for (Snakemake resources)."""
        return {}

    @classmethod
    def check(cls, label: str, spec: dict, config: dict, fail) -> None:
        """Fill in the spec's defaults and refuse what cannot work, with
        ``fail(key, problem, fix)``."""

    @classmethod
    def check_numerics(cls, label: str, spec: dict) -> list[str]:
        """Fill in ``framework``, ``precision`` and ``jit_compile``; warnings
        for settings that work but are likely slow."""
        spec.setdefault("framework", frameworks.DEFAULT)
        spec.setdefault("precision", precisions.DEFAULT)
        fw = frameworks.of(spec)
        spec.setdefault("jit_compile", fw.always_compiles)
        if fw.modes:  # the mode carries what jit_compile said (its synonym); no XLA words for it
            spec["mode"], spec["jit_compile"] = fw.mode_of(spec), False
        return []

    def native_precision(self, precision: str, env: dict) -> tuple[bool | None, str]:
        """Whether this hardware computes ``precision`` natively, and why."""
        return (True, "float32 is native everywhere") if precision == "float32" else (None, "not known")

    @classmethod
    def check_precision(cls, label: str, spec: dict, fail) -> None:
        """Refuse a precision this type of device does not have."""


class Cpu(Device):
    type = "cpu"
    compares_with_numpy = True
    compares_threads = True

    @property
    def threads(self) -> int:
        return self.spec["threads"]

    def recorded_threads(self) -> int | None:
        return self.spec.get("threads")

    def process_environment(self) -> dict[str, str]:
        threads = str(self.spec["threads"])
        # hide every accelerator; thread counts for the frameworks' and NumPy's BLAS
        hidden = {p.visible_variable: "" for p in PLATFORMS.values() if p.visible_variable}
        return {**hidden, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads}

    def describe(self, gpu_name: str | None = None) -> str:
        threads = self.spec.get("threads")
        if threads is None or threads != threads:  # missing, or NaN from a table
            return "? threads"
        return f"{int(threads)} thread{'s' if int(threads) != 1 else ''}"

    def native_precision(self, precision: str, env: dict) -> tuple[bool | None, str]:
        wanted = precisions.of(precision).cpu_flags
        if precision == "float32":
            return True, "float32 is native everywhere"
        if wanted is None:
            return False, f"a CPU has no {precisions.of(precision).words}"
        flags = env.get("cpu_low_precision_flags")
        if flags is None:
            return None, "the CPU's flags were not recorded"
        found = [f for f in wanted if f in flags]
        if found:
            return True, f"the CPU has {', '.join(found)}"
        return False, f"the CPU has none of {', '.join(wanted)}: emulated, expect it slower"

    @classmethod
    def check_precision(cls, label: str, spec: dict, fail) -> None:
        precision = precisions.of(spec.get("precision"))
        if precision.cpu_flags is None:
            fail(
                f"devices.{label}.precision",
                f"{precision.name} is a GPU's (NVIDIA, compute capability "
                f"{precision.gpu_from[0]}.{precision.gpu_from[1]} and newer); a CPU has no {precision.words}",
                "use float32 or mixed_bfloat16 on a CPU",
            )

    @classmethod
    def check_numerics(cls, label: str, spec: dict) -> list[str]:
        warnings = super().check_numerics(label, spec)
        if spec["precision"] == "mixed_float16":
            warnings.append(
                f"devices.{label}: mixed_float16 on a CPU is emulated on most CPUs (native only with "
                "avx512_fp16 or amx_fp16) and is likely slower than float32; mixed_bfloat16 is the CPU's "
                "low precision"
            )
        return warnings

    @classmethod
    def check(cls, label: str, spec: dict, config: dict, fail) -> None:
        spec.setdefault("threads", logical_cores())
        limit = config.get("max_threads") or logical_cores()
        if spec["threads"] > limit:
            fail(
                f"devices.{label}.threads",
                f"{spec['threads']} is more than the {limit} logical cores this machine has (more threads than "
                "cores only slow training down)",
                f"use at most {limit}, or raise max_threads for a cluster whose nodes have more cores",
            )


class Gpu(Device):
    type = "gpu"
    platform = PLATFORMS["cuda"]

    def process_environment(self) -> dict[str, str]:
        # index GPUs as nvidia-smi does, so that `index` means the same card
        return {"CUDA_DEVICE_ORDER": os.environ.get("CUDA_DEVICE_ORDER", "PCI_BUS_ID")}

    @property
    def threads(self) -> int:
        """Two cores: one for the thread that dispatches the compiled calls
        and reads the clock, one for the framework's own runtime threads
        (TensorFlow's inter-op pool, XLA's and the CUDA driver's host
        threads), so that neither waits for the other inside a timed epoch.
        Compilation, outside the clock, would use more, but is not timed."""
        return 2

    @property
    def index(self) -> int | None:
        return self.spec["index"]

    def describe(self, gpu_name: str | None = None) -> str:
        return gpu_name or f"GPU {self.spec['index']}"

    def resources(self) -> dict:
        model = self.spec.get("model")
        return {"gpu": 1, **({"gpu_model": model} if model else {})}

    def native_precision(self, precision: str, env: dict) -> tuple[bool | None, str]:
        if precision == "float32":
            return True, "float32 is native everywhere"
        cc = env.get("gpu_compute_capability")
        if not cc:
            return None, "the GPU's compute capability was not recorded"
        need = precisions.of(precision).gpu_from
        if tuple(int(p) for p in str(cc).split(".")[:2]) >= need:
            return True, f"compute capability {cc} has {precisions.of(precision).words.split()[0]} tensor cores"
        return False, f"compute capability {cc} is below {need[0]}.{need[1]}: emulated, expect it slower"

    @classmethod
    def check(cls, label: str, spec: dict, config: dict, fail) -> None:
        spec.setdefault("index", 0)

    @classmethod
    def check_precision(cls, label: str, spec: dict, fail, capability=None) -> None:
        """Refuse a precision the card does not have (tf32 below compute capability
        8.0), where nvidia-smi says which card it is; on a machine without
        the card (a cluster's login node) the record says so after the run."""
        precision = precisions.of(spec.get("precision"))
        if not precision.tensor_float_32:
            return
        cc = capability if capability is not None else compute_capability(spec["index"])
        if cc is not None and tuple(cc) < precision.gpu_from:
            fail(
                f"devices.{label}.precision",
                f"tf32 needs compute capability {precision.gpu_from[0]}."
                f"{precision.gpu_from[1]} or newer, and GPU {spec['index']} has {cc[0]}.{cc[1]}",
                "use float32 on this GPU (its float32 is already full float32)",
            )


#: every device type, by the name a config gives in `type`
TYPES: dict[str, type[Device]] = {cls.type: cls for cls in (Cpu, Gpu)}


def of(spec: dict) -> Device:
    """The device of a spec (its ``type`` must be one of :data:`TYPES`)."""
    return TYPES[spec["type"]](spec)


def prepare_environment(spec: dict) -> None:
    """Set the process environment of a device's job (thread counts for
    NumPy's BLAS, hidden GPUs): before NumPy or a framework is imported."""
    os.environ.update(of(spec).process_environment())


#: what a device that asks for none of a cluster resource gives it
_NO_RESOURCE = {"gpu": 0, "gpu_model": ""}


def cluster_resource(spec: dict, name: str):
    """The value of cluster resource ``name`` for a device's jobs."""
    return of(spec).resources().get(name, _NO_RESOURCE[name])


def describe(spec: dict, gpu_name: str | None = None) -> str:
    """What a device is, in words: ``2 threads`` or the GPU's name, with
    its numerics where they are not plain float32 (``2 threads, bf16 mixed``)."""
    fw = frameworks.of(spec)
    xla = with_xla(spec)
    plain = precisions.name_of(spec) == precisions.DEFAULT and xla == fw.always_compiles
    words = of(spec).describe(gpu_name)
    if fw.name != frameworks.DEFAULT:
        words = f"{words}, {fw.words}"
    mode = fw.mode_of(spec)
    if mode != fw.default_mode:
        words = f"{words}, {fw.modes[mode]}"
    # XLA is named only where it is a choice (JAX always compiles with it)
    shown = {**spec, "jit_compile": xla and not fw.always_compiles}
    return words if plain else f"{words}, {precisions.words(shown)}"


def with_xla(spec: dict) -> bool:
    """Whether ``jit_compile`` asks for XLA: a framework with modes reads it as its mode instead (PyTorch's
    ``jit_compile: true`` is its ``compiled`` mode)."""
    return bool(spec.get("jit_compile", False)) and not frameworks.of(spec).modes


def checked_spec(spec: dict) -> dict:
    """What a device is, which its records and calibrations must agree with (not a price, not a cluster's GPU
    model), every key present and its default filled in: two specs of one device compare equal as dicts."""
    return {
        "type": spec["type"],
        "threads": spec.get("threads"),
        "index": spec.get("index"),
        "precision": precisions.name_of(spec),
        "jit_compile": with_xla(spec),
        "framework": frameworks.name_of(spec),
        "mode": frameworks.of(spec).mode_of(spec),
    }


def first_difference(found: dict, wanted: dict) -> tuple[str, object, object] | None:
    """The first key (in order) whose values differ between two checked specs, with both values."""
    for key in wanted:
        if found.get(key) != wanted[key]:
            return key, found.get(key), wanted[key]
    return None


def columns(spec: dict, env: dict) -> dict:
    """The device's columns in summary.csv: the spec's keys, the checked spec itself (``device_spec``, as JSON:
    compared as a dict, never as table cells), and what the report says of the device, in words derived here
    from the spec itself (a row is never turned back into a spec)."""
    precision = precisions.name_of(spec)
    native, why = of(spec).native_precision(precision, env)
    gpu_name = env.get("gpu_name")
    return {
        "device_type": spec["type"],
        "threads": spec.get("threads"),
        "gpu_index": spec.get("index"),
        "gpu_name": gpu_name,
        "precision": precision,
        "jit_compile": with_xla(spec),
        "framework": frameworks.name_of(spec),
        "mode": frameworks.of(spec).mode_of(spec),
        "device_spec": json.dumps(checked_spec(spec), sort_keys=True),
        "device_words": describe(spec, gpu_name if isinstance(gpu_name, str) and gpu_name else None),
        "numerics_words": precisions.words({**spec, "jit_compile": with_xla(spec)}),
        "precision_native": native,
        "precision_native_why": why,
    }


def label(row) -> str:
    """``cpu (2 threads)``, ``gpu (NVIDIA H100)``: a device with what it is (its row's ``device_words``)."""
    return f"{row.device} ({row.device_words})"


def labels_of(summary) -> dict[str, str]:
    """Each device of a summary table with what it is: ``cpu (2 threads)``, ``gpu (NVIDIA H100)``."""
    return {device: label(runs.iloc[0]) for device, runs in summary.groupby("device")}
