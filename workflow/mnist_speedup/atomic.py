"""Atomic output: write to a hidden temporary file beside the target, then
rename it into place, so that no reader (and no rerun) ever sees a
half-written result, whatever interrupts the writer. The file gets the
mode a plain ``open()`` would give it (0666 less the umask), not
``mkstemp``'s private 0600, so that colleagues can read the results.
A temporary file left by a killed writer (``kill -9``) is removed by the
next write of the same target."""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import shutil
import tempfile
from pathlib import Path


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def leftovers(dest) -> list[Path]:
    """Temporary files of earlier, killed writes of ``dest``."""
    dest = Path(dest)
    return sorted(dest.parent.glob(f".{glob.escape(dest.name)}.*.part")) if dest.parent.is_dir() else []


@contextlib.contextmanager
def replacing(dest):
    """Yield a temporary path beside ``dest``; on success fsync it and
    rename it to ``dest``; on any failure (signals included) remove it."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    for stale in leftovers(dest):
        stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + dest.name + ".", suffix=".part", dir=dest.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~current_umask())
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, dest)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.errno == errno.ENOSPC:
            raise OSError(
                exc.errno,
                f"no space left on the device holding {dest} ({shutil.disk_usage(dest.parent).free:,} bytes free); "
                "nothing was written there. Fix: free some space (or point results/ at a larger disk) and run "
                "snakemake again: it redoes only what is missing",
            ) from exc
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes(dest, data: bytes) -> None:
    with replacing(dest) as tmp:
        tmp.write_bytes(data)


def write_text(dest, text: str) -> None:
    with replacing(dest) as tmp:
        tmp.write_text(text, encoding="utf-8")
