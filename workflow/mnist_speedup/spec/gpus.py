"""What nvidia-smi lists: the GPUs CUDA numbers here, each with its UUID and
compute capability, and, where there is none, why.

nvidia-smi is asked (fast, no CUDA context) so that a dry run stays quick.
NVML ignores ``CUDA_VISIBLE_DEVICES`` and numbers every card itself, so the
UUID is what names the same card to CUDA, to NVML and to the record.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

FIELDS = "index,uuid,name,compute_cap"
#: drivers before about 510 do not know compute_cap: asked again without it
OLD_FIELDS = "index,uuid,name"
_CC = re.compile(r"[0-9]+\.[0-9]+\Z")


@dataclass(frozen=True)
class Listing:
    """The GPUs CUDA numbers here (``[{"index", "uuid", "name", "compute_capability"}]``)
    and, where there is none, why (nvidia-smi missing, failing, or listing none)."""

    gpus: list
    reason: str | None = None


def run_nvidia_smi(fields: str, timeout: float = 10.0) -> tuple[str | None, str | None]:
    """(nvidia-smi's output, None), or (None, why it gave none)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None, "nvidia-smi is not installed (no NVIDIA driver on this machine)"
    try:
        proc = subprocess.run(
            [exe, f"--query-gpu={fields}", "--format=csv,noheader"], capture_output=True, text=True, timeout=timeout
        )
    except (subprocess.SubprocessError, OSError) as exc:
        return None, f"nvidia-smi failed: {type(exc).__name__}: {exc}"
    if proc.returncode != 0:
        said = (proc.stderr.strip() or proc.stdout.strip() or "no message").splitlines()[0][:200]
        return None, f"nvidia-smi failed (exit status {proc.returncode}): {said}"
    return proc.stdout, None


def listing(timeout: float = 10.0) -> Listing:
    """The GPUs CUDA numbers here, or why there is none."""
    out, problem = run_nvidia_smi(FIELDS, timeout)
    if out is None and problem and "compute_cap" in problem:
        out, problem = run_nvidia_smi(OLD_FIELDS, timeout)
    if out is None:
        return Listing([], problem)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = parse_nvidia_smi(out, visible)
    if gpus:
        return Listing(gpus)
    listed = len(parse_nvidia_smi(out))
    if listed:
        return Listing([], f"CUDA_VISIBLE_DEVICES={visible!r} hides the {listed} GPU(s) nvidia-smi lists")
    return Listing([], "nvidia-smi lists no GPU")


def detect_gpus() -> list[dict]:
    """The GPUs CUDA numbers here ([] where there is none)."""
    return listing().gpus


def parse_nvidia_smi(output: str, cuda_visible: str | None = None) -> list[dict]:
    """nvidia-smi's lines (``index, uuid, name[, compute_cap]``, or ``index,
    name``) as the cards CUDA numbers: with ``CUDA_VISIBLE_DEVICES`` only
    the listed ones (by index or by UUID), renumbered from 0 in that order,
    each keeping its UUID."""
    gpus = []
    for line in output.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2 or not parts[0].isdigit():
            continue
        cc = parts.pop() if len(parts) >= 4 and _CC.match(parts[-1]) else None
        uuid = parts[1] if len(parts) >= 3 and parts[1].startswith(("GPU-", "MIG-")) else None
        name = ", ".join(parts[2:] if uuid else parts[1:])
        gpus.append({"index": int(parts[0]), "uuid": uuid, "name": name} | ({"compute_capability": cc} if cc else {}))
    if cuda_visible is not None:
        wanted = [v.strip() for v in cuda_visible.split(",") if v.strip()]
        by_key = {str(g["index"]): g for g in gpus} | {g["uuid"]: g for g in gpus if g["uuid"]}
        chosen = []
        for v in wanted:  # CUDA stops at the first entry it cannot match
            match = by_key.get(v) or next((g for g in gpus if g["uuid"] and g["uuid"].startswith(v)), None)
            if match is None:
                break
            chosen.append(match)
        gpus = chosen
    return [{**g, "index": i} for i, g in enumerate(gpus)]


def gpu_uuid(index: int) -> str | None:
    """The UUID of the card CUDA numbers ``index`` here (None: nvidia-smi does not say)."""
    gpus = detect_gpus()
    return gpus[index]["uuid"] if index < len(gpus) else None


def compute_capability(index: int) -> tuple[int, int] | None:
    """The compute capability of the card CUDA numbers ``index`` here (None: unknown here)."""
    gpus = detect_gpus()
    cc = gpus[index].get("compute_capability") if index < len(gpus) else None
    return tuple(int(p) for p in cc.split(".")) if cc else None
