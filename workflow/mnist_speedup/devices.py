"""Devices: what ``devices: auto`` means, without importing TensorFlow.

GPU detection asks ``nvidia-smi`` (fast, no CUDA context) so that a dry run
of the workflow stays quick. A device spec is a plain dict:
``{"type": "cpu", "threads": N}`` or ``{"type": "gpu", "index": I}``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

LABEL_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
_LABEL_RE = re.compile(LABEL_PATTERN + r"\Z")


def logical_cores() -> int:
    """Cores this process may use (affinity-aware), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def detect_gpus(timeout: float = 10.0) -> list[dict]:
    """GPUs that ``nvidia-smi`` lists, as ``[{"index": i, "name": ...}]``.

    Returns [] when nvidia-smi is missing or fails (no driver, no GPU).
    ``CUDA_VISIBLE_DEVICES`` is honoured the way CUDA does: only the listed
    indices count, renumbered from 0.
    """
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index,name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        ).stdout
    except (subprocess.SubprocessError, OSError):
        return []
    return parse_nvidia_smi(out, os.environ.get("CUDA_VISIBLE_DEVICES"))


def parse_nvidia_smi(output: str, cuda_visible: str | None = None) -> list[dict]:
    gpus = []
    for line in output.splitlines():
        if "," not in line:
            continue
        index, name = (part.strip() for part in line.split(",", 1))
        if index.isdigit():
            gpus.append({"index": int(index), "name": name})
    if cuda_visible is not None:
        wanted = [v.strip() for v in cuda_visible.split(",") if v.strip()]
        if not all(v.isdigit() for v in wanted):  # UUIDs etc.: keep the count only
            return [{"index": i, "name": g["name"]} for i, g in enumerate(gpus[: len(wanted)])]
        by_index = {g["index"]: g for g in gpus}
        gpus = [by_index[int(v)] for v in wanted if int(v) in by_index]
        gpus = [{"index": i, "name": g["name"]} for i, g in enumerate(gpus)]
    return gpus


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


def describe(spec: dict, gpu_name: str | None = None) -> str:
    """What a device is, in words: ``2 threads`` or the GPU's name."""
    if spec["type"] == "cpu":
        return f"{spec['threads']} thread{'s' if spec['threads'] != 1 else ''}"
    return gpu_name or f"GPU {spec['index']}"
