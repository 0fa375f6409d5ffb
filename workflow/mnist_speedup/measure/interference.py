"""The interference meter: how much other processes ran during each epoch.

On the CPU, the machine's busy time from /proc/stat (user, nice, system,
irq, softirq and steal, over every core) less this process's own CPU time
(/proc/self/stat, all its threads), read just before and just after each
epoch's clock: what is left is CPU time that other processes used, given in
cores (1.0 = one core busy the whole epoch). On a GPU the meter also lists
the other processes NVML sees on the same GPU.

Where a counter cannot be read the value is null, with the reason, never 0.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from mnist_speedup.spec import devices
from mnist_speedup.spec.gpus import gpu_uuid

PROC_STAT = Path("/proc/stat")
#: the shortest epoch whose other-process share is read: the kernel counts CPU
#: time in ticks of 10 ms, so a shorter epoch reads 0% or 200% of a core
#: (seen on an H200's 5 ms epochs), never what ran
MIN_EPOCH_S = 0.2
PROC_SELF_STAT = Path("/proc/self/stat")
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system irq softirq steal (not idle, iowait, guest)


def machine_busy_s(path: Path = PROC_STAT) -> float:
    """CPU seconds every core of the machine has been busy since boot."""
    fields = path.read_text().splitlines()[0].split()[1:]
    return sum(int(fields[i]) for i in _BUSY_FIELDS if i < len(fields)) / os.sysconf("SC_CLK_TCK")


def own_cpu_s(path: Path = PROC_SELF_STAT) -> float:
    """CPU seconds this process (all its threads) has used."""
    fields = path.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


class CpuInterference:
    """Cores that other processes kept busy during each epoch."""

    source = "/proc/stat (machine busy time) less /proc/self/stat (this process)"

    def __init__(self, proc_stat: Path = PROC_STAT, self_stat: Path = PROC_SELF_STAT):
        self.paths, self.reason = (proc_stat, self_stat), None
        self.epoch_cores: list[float | None] = []
        self.short_epochs = 0
        try:
            self._read()
        except (OSError, ValueError, IndexError) as exc:
            self.reason = f"CPU interference not measurable here ({exc})"

    def _read(self) -> tuple[float, float, float]:
        return machine_busy_s(self.paths[0]), own_cpu_s(self.paths[1]), time.perf_counter()

    def start(self) -> None:
        self._before = None if self.reason else self._read()

    def stop(self) -> None:
        if self.reason or self._before is None:
            self.epoch_cores.append(None)
            return
        busy, own, wall = (after - before for after, before in zip(self._read(), self._before))
        if wall < MIN_EPOCH_S:
            self.short_epochs += 1
            self.epoch_cores.append(None)
            return
        self.epoch_cores.append(max(0.0, busy - own) / wall)

    def summary(self) -> dict:
        reason = self.reason
        if reason is None and self.short_epochs:
            reason = (
                f"{self.short_epochs} epoch(s) shorter than {MIN_EPOCH_S} s: other processes' share not "
                "resolvable (the kernel counts CPU time in 10 ms ticks); null for those"
            )
        return {"source": None if self.reason else self.source, "reason": reason, "epoch_other_cores": self.epoch_cores}


#: why the count of other GPU processes cannot tell this process by its PID
CONTAINER_PIDS = (
    "NVML lists the host's process IDs and this process's own ID is not among them (a container "
    "with its own PID namespace): one listed process is taken to be this one"
)


class GpuInterference(CpuInterference):
    """The CPU meter, and the other processes on this GPU (NVML)."""

    def __init__(self, uuid: str | None, **paths):
        super().__init__(**paths)
        self.epoch_gpu_processes: list[int | None] = []
        self.gpu_reason = None
        try:
            import pynvml

            from mnist_speedup.measure.energy import NO_UUID

            if uuid is None:
                raise LookupError(NO_UUID)
            pynvml.nvmlInit()
            self.nvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByUUID(uuid)
        except Exception as exc:  # missing, or no driver: say why
            self.nvml, self.gpu_reason = None, f"other GPU processes not measurable ({exc})"

    def _others_on_gpu(self) -> int | None:
        if self.nvml is None:
            return None
        try:
            procs = self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)
        except Exception as exc:  # noqa: BLE001 - NVMLLibraryMismatchError is no NVMLError: any failure is a reason
            self.nvml, self.gpu_reason = None, f"other GPU processes not measurable ({type(exc).__name__}: {exc})"
            return None
        pids = [p.pid for p in procs]
        if pids and os.getpid() not in pids:
            # NVML lists the host's PIDs: in a container (its own PID namespace) this process is
            # listed under another number. It is on the card while it trains, so one entry is it.
            self.gpu_reason = CONTAINER_PIDS
        return max(0, len(pids) - 1) if pids else 0

    def stop(self) -> None:
        super().stop()
        self.epoch_gpu_processes.append(self._others_on_gpu())

    def summary(self) -> dict:
        return super().summary() | {
            "epoch_other_gpu_processes": self.epoch_gpu_processes,
            "gpu_reason": self.gpu_reason,
        }


#: each interference meter by the name a platform gives (spec/platforms.py)
METERS = {"cpu": lambda device: CpuInterference(), "nvml": lambda device: GpuInterference(gpu_uuid(device.index))}


def meter_of(spec: dict):
    """What measures other processes' use of the device of ``spec`` during an epoch."""
    device = devices.of(spec)
    return METERS[device.platform.interference](device)
