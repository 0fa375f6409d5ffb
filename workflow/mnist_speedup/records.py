"""Run records: one JSON per run, written atomically, read back strictly.

A record that is truncated, has the wrong shape, or comes from a schema
version this code does not know stops aggregation with a RecordError that
names the file and the problem. Version 1 records (before per-epoch
validation accuracy, the compiled loop, memory and energy) cannot be
migrated: they lack what time to accuracy needs, so they are refused with
the fix (rerun them).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from . import atomic
from .trainer import SCHEMA_VERSION


class RecordError(ValueError):
    pass


def run_files(results_dir) -> list[Path]:
    """Every ``runs/<device>/bs<batch>/seed<seed>.json`` under a results folder."""
    return sorted(Path(results_dir, "runs").glob("*/bs*/seed*.json"))


def calibration_files(results_dir) -> list[Path]:
    return sorted(Path(results_dir, "calibration").glob("*.json"))


def write_json_atomic(path, obj) -> None:
    atomic.write_text(path, json.dumps(obj, indent=2, allow_nan=False) + "\n")


# (dotted key, accepted types) that aggregation relies on
_REQUIRED = (
    ("schema_version", int),
    ("device", str),
    ("device_spec.type", str),
    ("batch_size", int),
    ("seed", int),
    ("epochs", int),
    ("warmup_epochs", int),
    ("samples_per_epoch", int),
    ("timing.epoch_s", list),
    ("timing.first_epoch_s", (int, float)),
    ("timing.steady_epoch_mean_s", (int, float)),
    ("timing.samples_per_s", (int, float)),
    ("quality.test_accuracy", (int, float)),
    ("quality.val_accuracy", (int, float)),
    ("quality.epoch_val_accuracy", list),
    ("loop.steps_per_call", int),
    ("loop.calls_per_epoch", int),
    ("loop.optimizer_steps_per_epoch", list),
    ("memory", dict),
    ("energy", dict),
    ("quality.final_train_loss", (int, float)),
    ("flops.achieved_per_s", (int, float)),
    ("environment.hostname", str),
)


def _get(record: dict, dotted: str):
    value = record
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(dotted)
        value = value[part]
    return value


def check(record, source: str = "record") -> dict:
    if not isinstance(record, dict):
        raise RecordError(f"{source}: expected a JSON object, found {type(record).__name__}")
    version = record.get("schema_version")
    if version == 1:
        raise RecordError(
            f"{source}: schema_version 1 was written by an earlier version of this workflow, before "
            "per-epoch validation accuracy, the compiled training loop, memory and energy were recorded; "
            "it cannot be compared with today's runs. Fix: delete it and run snakemake again to redo that run."
        )
    if version != SCHEMA_VERSION:
        raise RecordError(
            f"{source}: schema_version {version!r} is not supported (this workflow reads "
            f"version {SCHEMA_VERSION}). Fix: rerun that training job with this workflow "
            "(delete the file and run snakemake again), or aggregate it with the workflow "
            "version that wrote it."
        )
    for dotted, types in _REQUIRED:
        try:
            value = _get(record, dotted)
        except KeyError:
            raise RecordError(f"{source}: required field `{dotted}` is missing") from None
        if isinstance(value, bool) or not isinstance(value, types):
            raise RecordError(f"{source}: field `{dotted}` has the wrong type ({value!r})")
        if isinstance(value, float) and not math.isfinite(value):
            raise RecordError(f"{source}: field `{dotted}` is not finite ({value!r})")
    epoch_s = record["timing"]["epoch_s"]
    if len(epoch_s) != record["epochs"] or not all(isinstance(v, (int, float)) and v > 0 for v in epoch_s):
        raise RecordError(f"{source}: timing.epoch_s must hold {record['epochs']} positive epoch times")
    if record["timing"]["steady_epoch_mean_s"] <= 0:
        raise RecordError(f"{source}: timing.steady_epoch_mean_s must be positive")
    accuracies = record["quality"]["epoch_val_accuracy"]
    if len(accuracies) != record["epochs"] or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in accuracies
    ):
        raise RecordError(f"{source}: quality.epoch_val_accuracy must hold {record['epochs']} accuracies in [0, 1]")
    return record


def load(path) -> dict:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordError(f"{path}: cannot be read ({exc})") from exc
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(
            f"{path}: is not valid JSON ({exc.msg} at line {exc.lineno}); the file is truncated "
            "or was edited by hand. Fix: delete it and run snakemake again to redo that run."
        ) from None
    return check(record, str(path))
