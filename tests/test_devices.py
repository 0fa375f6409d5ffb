from mnist_speedup.measure import devices

SMI = "0, NVIDIA H200\n1, NVIDIA H200\n"


def test_parse_nvidia_smi_and_visible_devices():
    assert devices.parse_nvidia_smi(SMI) == [{"index": 0, "uuid": None, "name": "NVIDIA H200"},
                                             {"index": 1, "uuid": None, "name": "NVIDIA H200"}]  # fmt: skip
    assert devices.parse_nvidia_smi(SMI, "1") == [{"index": 0, "uuid": None, "name": "NVIDIA H200"}]
    assert devices.parse_nvidia_smi(SMI, "") == []
    assert devices.parse_nvidia_smi("No devices were found\n") == []


UUIDS = "0, GPU-aaaa-0000, NVIDIA H200\n1, GPU-bbbb-1111, NVIDIA H100 80GB HBM3\n"


def test_visible_devices_by_index_or_uuid_keep_each_cards_uuid():
    """CUDA renumbers the visible cards from 0; the UUID still names the card."""
    assert devices.parse_nvidia_smi(UUIDS, "1") == [
        {"index": 0, "uuid": "GPU-bbbb-1111", "name": "NVIDIA H100 80GB HBM3"}
    ]
    assert [g["uuid"] for g in devices.parse_nvidia_smi(UUIDS, "GPU-bbbb-1111,0")] == ["GPU-bbbb-1111", "GPU-aaaa-0000"]
    assert [g["uuid"] for g in devices.parse_nvidia_smi(UUIDS, "GPU-bbbb")] == ["GPU-bbbb-1111"]  # a prefix, as CUDA
    assert devices.parse_nvidia_smi(UUIDS, "7,0") == []  # CUDA stops at the first it cannot match


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
