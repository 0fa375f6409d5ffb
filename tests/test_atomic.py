"""Atomic writes: a killed writer's temporary file is removed by the next
write of the same target, and outputs get the mode a plain open() gives."""

import os

import pytest

from mnist_speedup import atomic


def test_a_leftover_temporary_file_is_removed_by_the_next_write(tmp_path):
    dest = tmp_path / "figures" / "speedup.png"
    dest.parent.mkdir()
    stale = dest.parent / ".speedup.png.k1ll3d.part"  # what a kill -9 during savefig leaves
    stale.write_bytes(b"half a figure")
    other = dest.parent / ".timeline.png.x.part"  # another target's: not ours to remove
    other.write_bytes(b"")
    atomic.write_bytes(dest, b"a figure")
    assert dest.read_bytes() == b"a figure"
    assert not stale.exists() and other.exists()


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600)])
def test_outputs_honour_the_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        atomic.write_text(tmp_path / "a.json", "{}")
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == mode


def test_a_full_disk_names_the_file_and_the_fix(tmp_path, monkeypatch):
    import errno

    from mnist_speedup import atomic

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(type(tmp_path), "write_text", full)
    dest = tmp_path / "runs" / "seed1.json"
    with pytest.raises(OSError, match=r"no space left on the device holding .*seed1\.json.*Fix: free some space"):
        atomic.write_text(dest, "x")
    assert list(dest.parent.iterdir()) == []  # nothing half-written left
