"""Atomic output: write to a hidden temporary file beside the target, then
rename it into place, so that no reader (and no rerun) ever sees a
half-written result, whatever interrupts the writer."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def replacing(dest):
    """Yield a temporary path beside ``dest``; on success fsync it and
    rename it to ``dest``; on any failure (signals included) remove it."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + dest.name + ".", suffix=".part", dir=dest.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes(dest, data: bytes) -> None:
    with replacing(dest) as tmp:
        tmp.write_bytes(data)


def write_text(dest, text: str) -> None:
    with replacing(dest) as tmp:
        tmp.write_text(text, encoding="utf-8")
