from mnist_speedup import devices

SMI = "0, NVIDIA H200\n1, NVIDIA H200\n"


def test_parse_nvidia_smi_and_visible_devices():
    assert devices.parse_nvidia_smi(SMI) == [{"index": 0, "name": "NVIDIA H200"}, {"index": 1, "name": "NVIDIA H200"}]
    assert devices.parse_nvidia_smi(SMI, "1") == [{"index": 0, "name": "NVIDIA H200"}]
    assert devices.parse_nvidia_smi(SMI, "") == []
    assert devices.parse_nvidia_smi("No devices were found\n") == []


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
