import pytest

from mnist_speedup.spec import devices, gpus

SMI = "0, NVIDIA H200\n1, NVIDIA H200\n"


def test_parse_nvidia_smi_and_visible_devices():
    assert gpus.parse_nvidia_smi(SMI) == [
        {"index": 0, "uuid": None, "name": "NVIDIA H200"},
        {"index": 1, "uuid": None, "name": "NVIDIA H200"},
    ]
    assert gpus.parse_nvidia_smi(SMI, "1") == [{"index": 0, "uuid": None, "name": "NVIDIA H200"}]
    assert gpus.parse_nvidia_smi(SMI, "") == []
    assert gpus.parse_nvidia_smi("No devices were found\n") == []


UUIDS = "0, GPU-aaaa-0000, NVIDIA H200\n1, GPU-bbbb-1111, NVIDIA H100 80GB HBM3\n"


def test_visible_devices_by_index_or_uuid_keep_each_cards_uuid():
    """CUDA renumbers the visible cards from 0; the UUID still names the card."""
    assert gpus.parse_nvidia_smi(UUIDS, "1") == [{"index": 0, "uuid": "GPU-bbbb-1111", "name": "NVIDIA H100 80GB HBM3"}]
    assert [g["uuid"] for g in gpus.parse_nvidia_smi(UUIDS, "GPU-bbbb-1111,0")] == ["GPU-bbbb-1111", "GPU-aaaa-0000"]
    assert [g["uuid"] for g in gpus.parse_nvidia_smi(UUIDS, "GPU-bbbb")] == ["GPU-bbbb-1111"]  # a prefix, as CUDA
    assert gpus.parse_nvidia_smi(UUIDS, "7,0") == []  # CUDA stops at the first it cannot match


def test_auto_without_gpu_compares_thread_counts():
    assert devices.auto_devices(gpus=[], cores=8) == {
        "cpu": {"type": "cpu", "threads": 8},
        "cpu1": {"type": "cpu", "threads": 1},
    }


def test_auto_with_gpus():
    one = devices.auto_devices(gpus=[{"index": 0, "name": "x"}], cores=4)
    assert one == {"cpu": {"type": "cpu", "threads": 4}, "gpu": {"type": "gpu", "index": 0}}
    two = devices.auto_devices(gpus=[{"index": 0, "name": "x"}, {"index": 1, "name": "y"}], cores=4)
    assert set(two) == {"cpu", "gpu0", "gpu1"}


def test_safe_labels():
    assert devices.is_safe_label("gpu0") and devices.is_safe_label("cpu_4-threads")
    for bad in ("../x", "a/b", "", "-x", "a b", "x;rm", "é"):
        assert not devices.is_safe_label(bad)


#: what the lent H200's nvidia-smi answered (benchmarks/h200-2026-12-04/nvml.json)
H200 = "0, GPU-9642aec6-0e23-f576-cbda-c267058ef19f, NVIDIA H200, 9.0\n"


def test_the_compute_capability_is_read_with_the_card():
    assert gpus.parse_nvidia_smi(H200) == [
        {
            "index": 0,
            "uuid": "GPU-9642aec6-0e23-f576-cbda-c267058ef19f",
            "name": "NVIDIA H200",
            "compute_capability": "9.0",
        }
    ]


def _smi(monkeypatch, answers):
    """A stand-in nvidia-smi: ``answers`` maps the queried fields to (output, problem)."""
    monkeypatch.setattr(gpus, "run_nvidia_smi", lambda fields, timeout=10.0: answers[fields])


@pytest.mark.parametrize(
    "answers, visible, reason",
    [
        (
            {gpus.FIELDS: (None, "nvidia-smi is not installed (no NVIDIA driver on this machine)")},
            None,
            "nvidia-smi is not installed (no NVIDIA driver on this machine)",
        ),
        (
            {
                gpus.FIELDS: (
                    None,
                    "nvidia-smi failed (exit status 9): NVIDIA-SMI has failed because it couldn't "
                    "communicate with the NVIDIA driver",
                )
            },
            None,
            "nvidia-smi failed (exit status 9): NVIDIA-SMI has failed because it couldn't communicate",
        ),
        ({gpus.FIELDS: ("No devices were found\n", None)}, None, "nvidia-smi lists no GPU"),
        ({gpus.FIELDS: (H200, None)}, "", "CUDA_VISIBLE_DEVICES='' hides the 1 GPU(s) nvidia-smi lists"),
    ],
)
def test_why_no_gpu_was_found_names_the_one_reason_that_happened(monkeypatch, answers, visible, reason):
    """Issue 28 (7): missing, failing (with its message), listing none, or hidden
    are different reasons. Planted once: every failure as "no GPU" failed here."""
    _smi(monkeypatch, answers)
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    found = gpus.listing()
    assert found.gpus == [] and found.reason.startswith(reason)


def test_an_old_driver_without_compute_cap_is_asked_again_without_it(monkeypatch):
    old = "0, GPU-aaaa-0000, Tesla V100-SXM2-16GB\n"
    _smi(
        monkeypatch,
        {
            gpus.FIELDS: (
                None,
                'nvidia-smi failed (exit status 2): Field "compute_cap" is not a valid field to query.',
            ),
            gpus.OLD_FIELDS: (old, None),
        },
    )
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpus.listing() == gpus.Listing([{"index": 0, "uuid": "GPU-aaaa-0000", "name": "Tesla V100-SXM2-16GB"}])
    assert gpus.compute_capability(0) is None  # unknown: tf32 is then not refused at config time


def test_tf32_is_refused_at_config_time_on_a_gpu_below_compute_capability_8():
    """Issue 28 (1): a V100 (7.0) has no TF32. Planted once: without the
    check the config passed."""

    def fail(key, problem, fix):
        raise ValueError(f"{key}: {problem}. Fix: {fix}")

    spec = {"type": "gpu", "index": 0, "precision": "tf32"}
    with pytest.raises(
        ValueError,
        match=r"devices.gpu.precision: tf32 needs compute capability 8.0 or newer, "
        r"and GPU 0 has 7.0. Fix: use float32",
    ):
        devices.Gpu.check_precision("gpu", spec, fail, capability=(7, 0))
    devices.Gpu.check_precision("gpu", spec, fail, capability=(9, 0))  # an H200: accepted
    devices.Gpu.check_precision("gpu", {**spec, "precision": "float32"}, fail, capability=(7, 0))


def test_a_gpu_job_asks_for_two_cores():
    """Issue 28 (4): one for the dispatching thread and the clock, one for the
    framework's runtime threads (devices.Gpu.threads says why)."""
    assert devices.of({"type": "gpu", "index": 0}).threads == 2


def test_the_report_says_why_devices_auto_found_no_gpu(tmp_path, monkeypatch):
    """From nvidia-smi's answer at config time to the report's warning."""
    import copy

    from conftest import ROOT
    from crafted import crafted_tables, make_record
    from mnist_speedup.analysis import checks
    from mnist_speedup.config import parse as config_check

    failing = "nvidia-smi failed (exit status 9): NVIDIA-SMI has failed"
    _smi(monkeypatch, {gpus.FIELDS: (None, failing)})
    base = {
        "mirrors": ["/data/mnist"],
        "devices": "auto",
        "baseline": "cpu",
        "seeds": [1, 2],
        "batch_sizes": [100],
        "epochs": 3,
        "warmup_epochs": 1,
    }
    config = config_check.parse(copy.deepcopy(base), None, ROOT / "workflow/schemas/config.schema.yaml")
    assert config["_no_gpu_reason"] == failing and set(config["devices"]) == {"cpu", "cpu1"}
    summary = crafted_tables(
        tmp_path, [make_record(d, 100, s, threads=t) for d, t in (("cpu", 2), ("cpu1", 1)) for s in (1, 2)]
    )[0]
    shown = {"devices_auto": True, "no_gpu_reason": config["_no_gpu_reason"]}
    assert f"(devices: auto: {failing})" in checks.no_accelerator(summary, shown)[0]


def test_a_gpu_newer_than_the_tensorflow_wheels_architectures_is_warned_of_ptx_jit():
    """Issue 28 (7), against the build info's list (TensorFlow 2.21's CUDA
    wheel: sm_60 ... sm_90, compute_90). Planted once: `have < newest`
    (not <=) warned a 9.0 card, which has machine code, and failed."""
    from mnist_speedup.measure.frameworks.tensorflow.backend import ptx_jit

    built = ["sm_60", "sm_70", "sm_80", "sm_89", "sm_90", "compute_90"]
    assert ptx_jit(built, (9, 0)) is None and ptx_jit(built, (8, 6)) is None
    warning = ptx_jit(built, (10, 0))
    assert warning.startswith("compute capability 10.0 is newer than the newest architecture") and "(9.0)" in warning
    assert ptx_jit([], (10, 0)) is None  # no list: nothing to say
