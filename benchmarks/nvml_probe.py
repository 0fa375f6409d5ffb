"""What NVML and nvidia-smi say about this machine's GPUs, framework-independent.

Run on a GPU machine to check what the workflow's GPU meters rely on: how
NVML numbers the cards against CUDA_VISIBLE_DEVICES, their UUIDs, the
energy counter over one second of idle, the process list (and whether the
v3 call exists), and what ``devices: auto`` detects. Prints one JSON object.

    python benchmarks/nvml_probe.py > nvml.json
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))


def _nvml() -> dict:
    try:
        import pynvml
    except ImportError as exc:
        return {"error": f"pynvml not importable: {exc}"}
    out: dict = {"cards": []}
    pynvml.nvmlInit()
    out["driver"] = pynvml.nvmlSystemGetDriverVersion()
    for i in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(i)
        card = {"index": i, "uuid": pynvml.nvmlDeviceGetUUID(handle), "name": pynvml.nvmlDeviceGetName(handle)}
        try:
            before = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
            time.sleep(1.0)
            card["idle_watts_over_1s"] = (pynvml.nvmlDeviceGetTotalEnergyConsumption(handle) - before) / 1e3
        except Exception as exc:  # noqa: BLE001 - what failed is the finding
            card["energy_error"] = f"{type(exc).__name__}: {exc}"
        try:
            procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
            card["processes"] = [p.pid for p in procs]
        except Exception as exc:  # noqa: BLE001
            card["processes_error"] = f"{type(exc).__name__}: {exc}"
        by_uuid = pynvml.nvmlDeviceGetHandleByUUID(card["uuid"])
        card["uuid_handle_is_same_card"] = pynvml.nvmlDeviceGetIndex(by_uuid) == i
        out["cards"].append(card)
    return out


def main() -> None:
    from mnist_speedup.spec import devices, gpus

    smi = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid,name,compute_cap", "--format=csv,noheader"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    result = {
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "nvidia_smi": smi.stdout.strip().splitlines() or smi.stderr.strip(),
        "listing": dataclasses.asdict(gpus.listing()),
        "auto_devices": devices.auto_devices(),
        "nvml": _nvml(),
        "own_pid": os.getpid(),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
