"""How a run's record is built from what the trainer measured (its spec and path are spec/run.py's)."""

from __future__ import annotations

import dataclasses

from mnist_speedup.records import derived, seal
from mnist_speedup.spec.run import SCHEMA_VERSION, RunSpec


def make_record(spec: RunSpec, measured: dict, *, lock_wait_s: float, training_code: str, data_digest: str) -> dict:
    """The sealed record of one run: its spec, what the trainer measured
    (``trainer.run``), and where it came from; no value derived from the
    measurements (records/derived.py computes them when it is read)."""
    record = {
        "schema_version": SCHEMA_VERSION,
        **dataclasses.asdict(spec),
        "device_spec": dict(spec.device_spec),
        "workload_spec": dict(spec.workload_spec),
        **measured,
        "lock_wait_s": lock_wait_s,
        "training_code": training_code,
        "data_digest": data_digest,
    }
    return seal.seal(derived.strip(record))  # raw values only: the reader derives the rest
