"""Energy counters: NVML for GPUs, Linux RAPL (powercap) for CPUs.

A meter is read just before and just after each timed epoch's clock, so
that evaluation between epochs is not charged. Where no counter can be
read, :func:`meter_of` returns ``(None, reason)`` and the record says why
("RAPL not readable: permission denied", "NVML not installed", ...): the
energy fields are then null, never 0.

RAPL measures the whole CPU package (every process on it), not this
process alone; NVML's counter is the whole GPU board.
"""

from __future__ import annotations

from pathlib import Path

from mnist_speedup.spec import devices
from mnist_speedup.spec.gpus import gpu_uuid

POWERCAP = Path("/sys/class/powercap")


class EnergyUnavailable(RuntimeError):
    """No energy counter can be read; the message is the reason."""


class RaplMeter:
    """Sum of the package-level RAPL zones (``intel-rapl:N``; their
    sub-zones ``intel-rapl:N:M`` are parts of a package and not added)."""

    source = "RAPL (Linux powercap), whole CPU package(s)"

    def __init__(self, root: Path = POWERCAP):
        root = Path(root)
        if not root.is_dir():
            raise EnergyUnavailable(f"RAPL not available: {root} does not exist (no powercap driver, or not Linux)")
        self.zones = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)
        if not self.zones:
            raise EnergyUnavailable(f"RAPL not available: {root} has no intel-rapl package zone")
        self.ranges = [self._read(zone / "max_energy_range_uj") for zone in self.zones]
        self.last = [self._read(zone / "energy_uj") for zone in self.zones]
        self.total_j = 0.0

    @staticmethod
    def _read(path: Path) -> int:
        try:
            return int(path.read_text().strip())
        except PermissionError:
            raise EnergyUnavailable(
                f"RAPL not readable: permission denied on {path} (root only since Linux 5.10)"
            ) from None
        except (OSError, ValueError) as exc:
            raise EnergyUnavailable(f"RAPL not readable: {path}: {exc}") from None

    def read(self) -> float:
        """Joules since the meter was opened; a counter that wrapped past
        ``max_energy_range_uj`` is unwrapped (read often enough that it
        wraps at most once between reads)."""
        for i, zone in enumerate(self.zones):
            now = self._read(zone / "energy_uj")
            delta = now - self.last[i]
            if delta < 0:
                delta += self.ranges[i] + 1
            self.total_j += delta / 1e6
            self.last[i] = now
        return self.total_j


#: why no NVML meter reads a card whose UUID is not known
NO_UUID = (
    "the GPU's UUID is unknown (nvidia-smi did not list it): NVML numbers the cards itself, ignoring "
    "CUDA_VISIBLE_DEVICES, so no card is read rather than perhaps another one"
)


class NvmlMeter:
    """NVML's total energy counter of one GPU (Volta and newer), in mJ. The
    card is named by its UUID, the one name NVML and CUDA share."""

    source = "NVML total energy counter, whole GPU board"

    def __init__(self, uuid: str | None):
        try:
            import pynvml
        except ImportError:
            raise EnergyUnavailable("NVML not installed (pip install nvidia-ml-py, part of the gpu extra)") from None
        if uuid is None:
            raise EnergyUnavailable(NO_UUID)
        self.pynvml = pynvml
        try:
            pynvml.nvmlInit()
            self.handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
            self.start_mj = pynvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        except Exception as exc:  # noqa: BLE001 - NVMLError and the library-mismatch errors alike
            raise EnergyUnavailable(f"this GPU reports no energy counter (NVML: {type(exc).__name__}: {exc})") from None

    def read(self) -> float:
        try:
            now = self.pynvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        except Exception as exc:  # noqa: BLE001 - any NVML failure (not only NVMLError) nulls the energy, never the run
            raise EnergyUnavailable(
                f"NVML energy counter failed during the run ({type(exc).__name__}: {exc})"
            ) from None
        return (now - self.start_mj) / 1e3


class EpochEnergy:
    """Joules of each steady-state epoch: the meter is read just before and
    just after the epoch's clock. A counter that fails mid-run turns every
    energy field null, with the reason."""

    def __init__(self, meter, reason: str | None = None):
        """``meter``: an opened meter, or None with the ``reason`` (:func:`meter_of`)."""
        self.meter, self.reason = meter, reason
        self.joules: list[float] = []
        self._before = None

    def _read(self):
        if self.meter is None:
            return None
        try:
            return self.meter.read()
        except EnergyUnavailable as exc:
            self.meter, self.reason = None, str(exc)
            return None

    def start(self) -> None:
        self._before = self._read()

    def stop(self, steady: bool) -> None:
        after = self._read()
        if steady and self.meter is not None and self._before is not None:
            self.joules.append(after - self._before)

    def summary(self) -> dict:
        """The record's ``energy`` section: each steady epoch's joules (joules per epoch and watts are derived
        when the record is read, records/derived.py); null, with the reason, when there is no meter, or when the counter did not advance
        during an epoch: the epochs are shorter than its update interval
        (NVML's counter on an H200 stood still through 12 ms epochs and then
        jumped by 13 J), so a per-epoch figure would be noise."""
        if self.meter is not None and any(j <= 0 for j in self.joules):
            self.reason = (
                f"{self.meter.source} did not advance during {sum(j <= 0 for j in self.joules)} of "
                f"{len(self.joules)} steady epochs: they are shorter than the counter's update interval, "
                "so energy per epoch is not measurable here (train on more samples per epoch)"
            )
            self.meter = None
        if self.meter is None or not self.joules:
            return {"source": None, "reason": self.reason or "no steady-state epoch", "epoch_joules": None}
        # joules per epoch and watts are derived on read (records/derived.py)
        return {"source": self.meter.source, "reason": None, "epoch_joules": self.joules}


#: each energy meter by the name a platform gives (spec/platforms.py), built from the device and the powercap folder
METERS = {
    "rapl": lambda device, powercap: RaplMeter(powercap),
    "nvml": lambda device, powercap: NvmlMeter(gpu_uuid(device.index)),
}


def meter_of(spec: dict, powercap=None):
    """``(meter, None)`` for the device of ``spec``, as its platform says, or ``(None, reason)``."""
    device = devices.of(spec)
    name = device.platform.energy
    if name is None:
        return None, f"no energy meter is known for the {device.platform.words} platform"
    try:
        return METERS[name](device, powercap or POWERCAP), None
    except EnergyUnavailable as exc:
        return None, str(exc)
