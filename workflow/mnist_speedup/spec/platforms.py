"""Platforms: what kind of hardware a device is, and what follows from it.

A device type (spec/devices.py) runs on one platform. The platform says:
- whether it is an accelerator (its absence from a machine is worth a warning;
  a framework opens it by the device's ``index``, a CPU by its ``threads``);
- which meters apply: the energy meter (``rapl``: Linux powercap, a CPU
  package's counter; ``nvml``: the card's cumulative energy counter) and the
  interference meter (``cpu``: other processes' CPU time; ``nvml``: other
  processes on the card), each built in measure/ from the name given here;
- which environment file installs a framework for it: a framework's declaration
  (measure/frameworks/<name>/framework.yaml) names one file per platform it runs on;
- which environment variable hides or orders its cards before a framework starts.

Adding ROCm (AMD GPUs) would take:
- here: ``Platform("rocm", "ROCm", accelerator=True, energy="amdsmi", interference="amdsmi",
  visible_variable="HIP_VISIBLE_DEVICES")``, and a device type for it in spec/devices.py
  (or a ``platform:`` key on the gpu type) with its detection (``amd-smi list``,
  beside spec/gpus.py's nvidia-smi);
- measure/energy.py and measure/interference.py: an ``amdsmi`` meter each
  (amdsmi_get_energy_count and the process list), registered under that name;
  RAPL and the CPU meter apply unchanged to the host;
- each framework folder: a ``rocm`` environment file in framework.yaml (envs/*-rocm.yaml),
  and its opening, a ``rocm`` row in its backend's ``opens`` table (tests/test_frameworks.py checks
  that the two agree; JAX's ``gpu`` backend and PyTorch's ``cuda`` device both mean a
  ROCm card on a ROCm build; TensorFlow needs tensorflow-rocm);
- measure/cudalibs.py has a ROCm twin (the loaded HIP, MIOpen and rocBLAS versions);
- precisions: spec/precisions.py's ``gpu_from`` is an NVIDIA compute capability;
  a ROCm card needs its own table (gfx90a and newer have bf16 and no TF32).
Apple's GPUs (``mps``) would be the same list without NVML's twin: no energy
counter an unprivileged process can read, so ``energy=None`` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Platform:
    """One platform: its name, as the environment files are keyed, and what follows from it."""

    name: str
    words: str
    accelerator: bool
    #: the meters that apply, by their names in measure/energy.py and measure/interference.py (None: none)
    energy: str | None
    interference: str
    #: the environment variable that names the cards a process sees ("" where there are none)
    visible_variable: str = ""


#: the accelerator's environment fields every record names (null on a CPU; measure/environment.py fills them)
ACCELERATOR_FIELDS = (
    "gpu_name",
    "gpu_uuid",
    "gpu_compute_capability",
    "gpu_driver",
    "cuda_version",
    "cudnn_version",
    "cublas_version",
)

#: every platform, by its name
PLATFORMS: dict[str, Platform] = {
    p.name: p
    for p in (
        Platform("cpu", "CPU", accelerator=False, energy="rapl", interference="cpu"),
        Platform(
            "cuda",
            "NVIDIA CUDA",
            accelerator=True,
            energy="nvml",
            interference="nvml",
            visible_variable="CUDA_VISIBLE_DEVICES",
        ),
    )
}
