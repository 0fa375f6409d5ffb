"""Sealing: a record carries the SHA-256 of its own content.

A job writes its record sealed; whoever reads it later (aggregation, a
bundle on another machine) can tell that nothing was edited since.
"""

from __future__ import annotations

import hashlib
import json

from mnist_speedup import atomic

#: the field in which a job writes the SHA-256 of the rest of its record
DIGEST_FIELD = "record_sha256"


def content_digest(record: dict) -> str:
    """SHA-256 of a record's content without its own digest field."""
    body = {k: v for k, v in record.items() if k != DIGEST_FIELD}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seal(record: dict) -> dict:
    """The record with the digest of its content, as the job that made it wrote it."""
    return {**record, DIGEST_FIELD: content_digest(record)}


def write_json_atomic(path, obj) -> None:
    atomic.write_text(path, json.dumps(obj, indent=2, allow_nan=False) + "\n")


def write_sealed(path, record: dict) -> None:
    """Seal ``record`` and write it atomically (sealing a sealed record again gives the same digest)."""
    write_json_atomic(path, seal(record))
