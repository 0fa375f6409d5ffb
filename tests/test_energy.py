"""Energy and memory readers with stand-ins: a fake powercap tree, a fake
pynvml module, a stubbed GPU memory query. None needs real hardware."""

import sys
import types
from pathlib import Path

import pytest

from crafted import make_record
from mnist_speedup.measure import energy
from mnist_speedup.measure.frameworks.tensorflow.backend import GpuMemory
from mnist_speedup.records import derived


def zone(root: Path, name: str, energy_uj: int, max_uj: int = 262_143_328_850) -> Path:
    z = root / name
    z.mkdir(parents=True)
    (z / "energy_uj").write_text(f"{energy_uj}\n")
    (z / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return z


def test_rapl_sums_packages_not_their_subzones(tmp_path):
    p0 = zone(tmp_path, "intel-rapl:0", 1_000_000)
    p1 = zone(tmp_path, "intel-rapl:1", 5_000_000)
    sub = zone(tmp_path, "intel-rapl:0:0", 0)  # a part of package 0: never added
    meter = energy.RaplMeter(tmp_path)
    (p0 / "energy_uj").write_text("3000000")
    (p1 / "energy_uj").write_text("5500000")
    (sub / "energy_uj").write_text("999999999")
    assert meter.read() == pytest.approx(2.5)  # (2.0 + 0.5) J


def test_rapl_unwraps_a_counter_that_wrapped(tmp_path):
    z = zone(tmp_path, "intel-rapl:0", 999_000, max_uj=1_000_000)
    meter = energy.RaplMeter(tmp_path)
    (z / "energy_uj").write_text("500")  # wrapped past 1,000,000
    assert meter.read() == pytest.approx((1_000_000 - 999_000 + 1 + 500) / 1e6)


def test_rapl_unreadable_gives_the_reason_never_zero(tmp_path, monkeypatch):
    zone(tmp_path, "intel-rapl:0", 1)
    real = Path.read_text

    def denied(self, *a, **k):
        if self.name == "energy_uj":
            raise PermissionError(13, "Permission denied")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", denied)
    meter, reason = energy.meter_of({"type": "cpu", "threads": 1}, tmp_path)
    assert meter is None and "RAPL not readable: permission denied" in reason
    summary = energy.EpochEnergy(*energy.meter_of({"type": "cpu", "threads": 1}, tmp_path)).summary()
    assert summary["epoch_joules"] is None and "permission denied" in summary["reason"]


def test_no_powercap_tree(tmp_path):
    meter, reason = energy.meter_of({"type": "cpu", "threads": 1}, tmp_path / "absent")
    assert meter is None and "RAPL not available" in reason


def test_epoch_energy_counts_only_steady_epochs(tmp_path):
    z = zone(tmp_path, "intel-rapl:0", 0)
    e = energy.EpochEnergy(*energy.meter_of({"type": "cpu", "threads": 1}, tmp_path))
    for steady, (before, after) in (
        (False, (0, 5_000_000)),
        (True, (5_000_000, 7_000_000)),
        (True, (7_000_000, 10_000_000)),
    ):
        (z / "energy_uj").write_text(str(before))
        e.start()
        (z / "energy_uj").write_text(str(after))
        e.stop(steady)
    s = e.summary()
    assert s["epoch_joules"] == pytest.approx([2.0, 3.0])
    derived_energy = derived.derive(make_record(epoch_s=(9.0, 1.0, 2.0), energy=s))["energy"]  # as read: per epoch, W
    assert derived_energy["joules_per_epoch"] == pytest.approx(2.5) and derived_energy["mean_watts"] == pytest.approx(
        5.0 / 3.0
    )
    assert "whole CPU package" in s["source"]


class FakeNVMLError(Exception):
    pass


#: what nvidia-smi lists on a machine with two cards
TWO_CARDS = "0, GPU-aaaa-0000, NVIDIA H200\n1, GPU-bbbb-1111, NVIDIA H200\n"


@pytest.fixture(autouse=True)
def two_cards(monkeypatch):
    from mnist_speedup.spec import gpus

    monkeypatch.setattr(gpus, "run_nvidia_smi", lambda fields, timeout=10.0: (TWO_CARDS, None))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def fake_pynvml(counter_mj, fail_on=None):
    mod = types.ModuleType("pynvml")
    mod.NVMLError = FakeNVMLError
    state = {"mj": counter_mj}

    def check(name):
        if fail_on == name:
            raise FakeNVMLError("Not Supported")

    mod.nvmlInit = lambda: check("init")
    mod.nvmlDeviceGetHandleByIndex = lambda i: (check("handle"), f"gpu{i}")[1]
    mod.nvmlDeviceGetHandleByUUID = lambda u: (check("handle"), f"card-{u}")[1]
    mod.nvmlDeviceGetTotalEnergyConsumption = lambda h: (check("energy"), state["mj"])[1]
    return mod, state


def test_nvml_reads_the_energy_counter(monkeypatch):
    mod, state = fake_pynvml(10_000)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    e = energy.EpochEnergy(*energy.meter_of({"type": "gpu", "index": 0}))
    e.start()
    state["mj"] += 150_000  # 150 J
    e.stop(True)
    s = e.summary()
    assert s["epoch_joules"] == pytest.approx([150.0])
    assert "NVML" in s["source"]


def test_nvml_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    meter, reason = energy.meter_of({"type": "gpu", "index": 0})
    assert meter is None and reason.startswith("NVML not installed")


def test_nvml_without_energy_counter(monkeypatch):
    mod, _ = fake_pynvml(0, fail_on="energy")
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    meter, reason = energy.meter_of({"type": "gpu", "index": 0})
    assert meter is None and "this GPU reports no energy counter" in reason


def fake_tf(peak=None, fail=False):
    """TensorFlow's memory queries as far as the reader uses them: like TF,
    they refuse a device name that is not `GPU:<i>` of a visible GPU (one here)."""

    def check(device):
        if fail or device != "GPU:0":
            raise ValueError(f"Failed parsing device name: {device!r}" if not fail else "no such device")

    def info(device):
        check(device)
        return {"current": 1, "peak": peak}

    experimental = types.SimpleNamespace(reset_memory_stats=check, get_memory_info=info)
    return types.SimpleNamespace(config=types.SimpleNamespace(experimental=experimental))


def test_gpu_memory_peak_with_a_stubbed_query():
    assert GpuMemory(fake_tf(peak=123_456_789), "/GPU:0").peak() == {
        "gpu_peak_bytes": 123_456_789,
        "gpu_reason": None,
    }
    broken = GpuMemory(fake_tf(fail=True), "/GPU:0").peak()
    assert broken["gpu_peak_bytes"] is None and "unavailable" in broken["gpu_reason"]


def test_the_memory_stand_in_refuses_names_tensorflow_refuses():
    tf = fake_tf(peak=5)
    for wrong in ("/GPU:0", "GPU:1", "gpu0", "CPU:0"):
        with pytest.raises(ValueError):
            tf.config.experimental.get_memory_info(wrong)
    assert tf.config.experimental.get_memory_info("GPU:0")["peak"] == 5


def test_a_counter_that_stands_still_through_an_epoch_gives_no_energy(monkeypatch):
    """Seen on an H200: NVML's counter did not move through two 12 ms epochs and
    jumped 13 J in the third. A per-epoch mean of 0, 13 and 0 J is noise, so
    the record says why there is no figure. Planted once: without the check
    the summary gave 4.4 J per epoch and failed."""
    mod, state = fake_pynvml(10_000)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    e = energy.EpochEnergy(*energy.meter_of({"type": "gpu", "index": 0}))
    for jump in (0, 13_334, 0):
        e.start()
        state["mj"] += jump
        e.stop(True)
    s = e.summary()
    assert s["epoch_joules"] is None
    assert "did not advance during 2 of 3 steady epochs" in s["reason"]


def test_an_nvml_error_of_another_class_ends_the_energy_not_the_run(monkeypatch):
    """nvidia-ml-py raises NVMLLibraryMismatchError (no NVMLError) on an
    older driver: the meter turns null with the reason; nothing escapes."""
    mod, state = fake_pynvml(10_000)

    class NVMLLibraryMismatchError(Exception):
        pass

    def mismatch(handle):
        raise NVMLLibraryMismatchError("Unversioned function called and the pyNVML version does not match")

    monkeypatch.setitem(sys.modules, "pynvml", mod)
    e = energy.EpochEnergy(*energy.meter_of({"type": "gpu", "index": 0}))
    mod.nvmlDeviceGetTotalEnergyConsumption = mismatch
    e.start()
    e.stop(True)
    s = e.summary()
    assert s["epoch_joules"] is None and "NVMLLibraryMismatchError" in s["reason"]


def test_nvml_reads_the_card_cuda_trains_on_by_its_uuid(monkeypatch):
    """Issue 28 (3): with CUDA_VISIBLE_DEVICES=1, CUDA's GPU 0 is the second
    card; NVML ignores the variable and would call the first card 0. The
    meter asks NVML for the card by UUID. Planted once: the meter by index
    read card 0's counter (1 J) and failed."""
    mod, _ = fake_pynvml(0)
    # each card's counter as read: when the meter opens, then around the epoch
    counters = {"card-GPU-aaaa-0000": [1_000, 1_000, 2_000], "card-GPU-bbbb-1111": [10_000, 10_000, 160_000]}
    mod.nvmlDeviceGetTotalEnergyConsumption = lambda handle: counters[handle].pop(0)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    e = energy.EpochEnergy(*energy.meter_of({"type": "gpu", "index": 0}))
    e.start()
    e.stop(True)
    assert e.summary()["epoch_joules"] == pytest.approx([150.0])


def test_a_gpu_nvidia_smi_does_not_list_reads_no_card(monkeypatch):
    from mnist_speedup.spec import gpus

    mod, _ = fake_pynvml(0)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    monkeypatch.setattr(gpus, "run_nvidia_smi", lambda fields, timeout=10.0: (None, "nvidia-smi failed"))
    meter, reason = energy.meter_of({"type": "gpu", "index": 0})
    assert meter is None and "UUID is unknown" in reason and "CUDA_VISIBLE_DEVICES" in reason
