"""Issue 21 (5): the interference meter sees a busy neighbour, and the report names the runs it disturbed."""

import subprocess
import sys
import time

import pandas as pd

from crafted import crafted_tables, make_record
from mnist_speedup.analysis import checks
from mnist_speedup.measure import interference


def test_a_busy_neighbour_process_is_seen():
    meter = interference.CpuInterference()
    assert meter.reason is None
    neighbour = subprocess.Popen(
        [sys.executable, "-c", "import time\nt = time.time() + 3\nwhile time.time() < t: pass"]
    )
    try:
        time.sleep(0.5)  # let it start spinning
        meter.start()
        time.sleep(1.5)  # this process sleeps: what the meter sees is the neighbour
        meter.stop()
    finally:
        neighbour.kill()
        neighbour.wait()
    (cores,) = meter.summary()["epoch_other_cores"]
    assert cores > 0.6, cores  # one core spinning, less scheduling noise


def test_this_process_own_work_is_not_counted():
    """Issue 32 (3): measured whatever else runs on the machine. Two epochs
    back to back, one sleeping and one spinning a core of this process: the
    spinning epoch reads no more than the sleeping one (plus scheduling
    noise), because this process's own CPU time is taken out. A neighbour
    adds the same to both. Planted once: not subtracting this process's own
    time read a full core more and failed."""
    meter = interference.CpuInterference()
    readings = {}
    for spin in (False, True, False):
        meter.start()
        t = time.perf_counter() + 1.0
        while time.perf_counter() < t:
            if not spin:
                time.sleep(0.01)
        meter.stop()
        readings.setdefault(spin, []).append(meter.summary()["epoch_other_cores"][-1])
    quiet = max(readings[False])  # the busier of the two sleeping epochs around the spinning one
    assert readings[True][0] < quiet + 0.5, readings


def test_no_proc_gives_a_reason_not_zero(tmp_path):
    meter = interference.CpuInterference(proc_stat=tmp_path / "missing")
    meter.start()
    meter.stop()
    summary = meter.summary()
    assert summary["epoch_other_cores"] == [None] and "not measurable" in summary["reason"]


def test_disturbed_runs_are_named_in_the_warnings(tmp_path):
    quiet = {"source": "x", "reason": None, "epoch_other_cores": [0.0, 0.01, 0.02]}
    busy = {"source": "x", "reason": None, "epoch_other_cores": [0.0, 0.03, 0.45]}
    recs = [make_record("cpu", 100, s, interference=busy if s == 2 else quiet) for s in (1, 2, 3)]
    recs += [make_record("cpu1", 100, s, interference=quiet) for s in (1, 2, 3)]
    summary, _, _, _ = crafted_tables(tmp_path, recs)
    (warning,) = checks.interference(summary)
    assert "cpu at batch size 100, seed 2 (45% of a core)" in warning and "seed 1" not in warning
    assert len(checks.disturbed(summary)) == 1


def test_warm_up_epochs_do_not_count_and_old_records_are_not_flagged(tmp_path):
    warm = {"source": "x", "reason": None, "epoch_other_cores": [0.9, 0.01, 0.02]}  # busy only while warming up
    recs = [make_record("cpu", 100, s, interference=warm) for s in (1, 2)] + [make_record("cpu1", 100, 1)]
    summary, _, _, _ = crafted_tables(tmp_path, recs)
    assert checks.interference(summary) == []
    assert pd.isna(summary[summary.device == "cpu1"].other_cores_max).all()


def test_other_processes_on_the_gpu_are_counted_with_a_stand_in_for_nvml(monkeypatch):
    import os
    import types

    class NVMLError(Exception):
        pass

    procs = [types.SimpleNamespace(pid=os.getpid()), types.SimpleNamespace(pid=1), types.SimpleNamespace(pid=2)]
    asked = []

    def handle(uuid):
        asked.append(uuid)
        if uuid != "GPU-bbbb":
            raise NVMLError("Not Found")
        return "handle-1"

    fake = types.SimpleNamespace(
        NVMLError=NVMLError,
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByUUID=handle,
        nvmlDeviceGetComputeRunningProcesses=lambda h: procs if h == "handle-1" else [],
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    meter = interference.GpuInterference("GPU-bbbb")
    meter.start()
    meter.stop()
    assert meter.summary()["epoch_other_gpu_processes"] == [2] and asked == ["GPU-bbbb"]  # itself not counted
    wrong = interference.GpuInterference("GPU-gone")  # a card NVML does not know: a reason, never 0
    wrong.start()
    wrong.stop()
    assert wrong.summary()["epoch_other_gpu_processes"] == [None] and "Not Found" in wrong.gpu_reason


def test_an_epoch_shorter_than_the_kernel_tick_reads_null_with_the_reason():
    """Seen on an H200: 5 ms epochs read 0% or 209% of a core, one 10 ms tick
    either way. Planted once: without the bound the reading was a number."""
    meter = interference.CpuInterference()
    meter.start()
    meter.stop()  # an epoch of microseconds
    summary = meter.summary()
    assert summary["epoch_other_cores"] == [None] and "shorter than 0.2 s" in summary["reason"]


def test_a_process_list_call_of_another_error_class_gives_a_reason(monkeypatch):
    """NVMLLibraryMismatchError is no NVMLError: it must not end the run."""
    import types

    class NVMLError(Exception):
        pass

    class NVMLLibraryMismatchError(Exception):
        pass

    def processes(handle):
        raise NVMLLibraryMismatchError("no v3 symbol in this driver")

    fake = types.SimpleNamespace(
        NVMLError=NVMLError,
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByUUID=lambda u: "h",
        nvmlDeviceGetComputeRunningProcesses=processes,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    meter = interference.GpuInterference("GPU-aaaa")
    meter.start()
    meter.stop()
    summary = meter.summary()
    assert summary["epoch_other_gpu_processes"] == [None]
    assert "NVMLLibraryMismatchError" in summary["gpu_reason"]


def test_in_a_container_the_run_does_not_count_itself_and_says_why(monkeypatch):
    """Issue 28 (6): NVML lists host PIDs, so inside a container this process
    is listed under a number it does not know. Planted once: counting every
    PID not equal to os.getpid() read 2 other processes where there was 1."""
    import types

    host_pids = [types.SimpleNamespace(pid=4_000_001), types.SimpleNamespace(pid=4_000_002)]  # us and one other
    fake = types.SimpleNamespace(
        NVMLError=Exception,
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByUUID=lambda u: "h",
        nvmlDeviceGetComputeRunningProcesses=lambda h: host_pids,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    meter = interference.GpuInterference("GPU-aaaa")
    meter.start()
    meter.stop()
    summary = meter.summary()
    assert summary["epoch_other_gpu_processes"] == [1]
    assert "host's process IDs" in summary["gpu_reason"] and "container" in summary["gpu_reason"]


def test_a_run_whose_threads_outnumber_the_free_cores_is_flagged(tmp_path):
    """2 threads on a 2-core machine beside a neighbour using 0.9 of a core: 1 core free, flagged; 0.3: 2 free, not.
    Planted once: comparing threads with the machine's cores alone (no neighbour) flagged nothing and failed."""

    def busy(cores):
        return {"source": "x", "reason": None, "epoch_other_cores": [0.0, cores, cores]}

    recs = [
        make_record("cpu", 100, s, interference=busy(0.9 if s == 1 else 0.3), environment={"logical_cores": 2})
        for s in (1, 2)
    ]
    recs += [
        make_record("cpu1", 100, s, threads=1, interference=busy(0.9), environment={"logical_cores": 2}) for s in (1, 2)
    ]
    summary, _, _, _ = crafted_tables(tmp_path, recs)
    assert list(checks.oversubscribed(summary)[["device", "seed"]].itertuples(index=False, name=None)) == [("cpu", 1)]
    (warning,) = checks.oversubscription(summary)
    assert "cpu at batch size 100, seed 1 (2 threads, 1.1 of 2 cores free)" in warning and "cpu1" not in warning
