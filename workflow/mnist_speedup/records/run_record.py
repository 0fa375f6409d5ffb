"""Run records: one JSON per run, written atomically, read back strictly.

A record that is truncated, has the wrong shape, or comes from a schema
version this code does not know stops aggregation with a RecordError that
names the file and the problem. The reader gives a read-only record with
every raw value and every value derived from them (records/derived.py),
computed on read. Version 3 (which stored the derived values too) is read
through one migration, after its seal is checked over its own content and
its stored values against their source. Records of earlier versions
(:data:`OLDER`: before per-epoch validation, or before workloads) cannot be
migrated: they lack what today's comparisons need, so they are refused with
the fix (rerun them).
"""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import yaml

from mnist_speedup.records import derived, fields, invariants
from mnist_speedup.records.jsontext import decode
from mnist_speedup.records.seal import DIGEST_FIELD, content_digest
from mnist_speedup.spec import run, workloads
from mnist_speedup.spec.devices import LABEL_PATTERN

_LABEL = re.compile(LABEL_PATTERN + r"\Z")
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}\Z")
#: an epoch of this MLP on MNIST longer than a day is not a measurement
MAX_EPOCH_S = 86_400.0
#: how closely derived timing fields must match the epoch times (JSON keeps
#: full float precision, so this only absorbs the last bits of rounding)
RELATIVE_TOLERANCE = 1e-6


class RecordError(ValueError):
    pass


class Record(dict):
    """A run record as the reader gives it: read-only at every depth of its mappings (``record | {...}``
    and ``dict(record)`` make a new, writable dict)."""

    def _read_only(self, *args, **kwargs):
        raise TypeError("a run record as read is read-only: make a new dict, e.g. record | {...}")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only

    def __copy__(self):
        return dict(self)

    def __deepcopy__(self, memo):
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self):
        return dict, (dict(self),)


# YAML (the report's configuration and environment blocks) writes a record's mappings as the dicts they are
yaml.SafeDumper.add_representer(Record, yaml.representer.SafeRepresenter.represent_dict)


def frozen(value):
    """``value`` with every mapping in it a :class:`Record` (lists stay lists)."""
    if isinstance(value, dict):
        return Record({k: frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return [frozen(v) for v in value]
    return value


#: the earlier versions read by migration, and how they differ
MIGRATED = {3: "it stored the values derived from its raw measurements beside them (checked, then computed again)"}
#: what each earlier record version lacked
OLDER = {
    1: "before per-epoch validation accuracy, the compiled training loop, memory and energy were recorded",
    2: "before workloads (it trained the MLP only and lies in runs/<device>/, not runs/<workload>/<device>/)",
}


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number a measurement can have")


def parse(text: str):
    """JSON without NaN or Infinity (Python's json accepts both), nested no deeper than jsontext.MAX_DEPTH."""
    return decode(text, parse_constant=_refuse_constant)


def check_digest(record: dict, source: str) -> None:
    written = record.get(DIGEST_FIELD)
    if not isinstance(written, str):
        raise RecordError(
            f"{source}: has no `{DIGEST_FIELD}`, so it cannot be shown to be what its job wrote. "
            "Fix: delete it and run snakemake again to redo that run (on the machine that made it)."
        )
    if written != content_digest(record):
        raise RecordError(
            f"{source}: was edited after it was written (its content no longer matches its "
            f"`{DIGEST_FIELD}`). Fix: restore the original file, or delete it and rerun that run."
        )


def check_names(record: dict, source: str, label_key: str = "device") -> None:
    """Labels and hostnames end up in file names, tables and HTML: only safe ones."""
    label, host = record.get(label_key), (record.get("environment") or {}).get("hostname")
    if not isinstance(label, str) or not _LABEL.match(label):
        raise RecordError(
            f"{source}: {label_key} label {label!r} is not a safe name (letters, digits, '-' and '_', "
            f"starting with a letter or digit). Fix: rename the {label_key} in the config of the machine "
            "that made it and rerun, or remove the record."
        )
    if not isinstance(host, str) or not _HOST.match(host):
        shown = (
            repr(host)
            if not isinstance(host, str) or len(host) <= 80
            else f"{host[:60]!r}... ({len(host):,} characters)"
        )
        raise RecordError(
            f"{source}: hostname {shown} is not a safe name (`environment.hostname`: letters, digits, '.', '-' "
            "and '_', at most 253 characters). "
            "Fix: remove the record, or rerun it on a machine with a plain hostname."
        )


def _get(record: dict, dotted: str):
    value = record
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(dotted)
        value = value[part]
    return value


def _check_types(record: dict, source: str, derived_names) -> None:
    """Every declared field of the right type (a missing derived value aside, where it is derived later)."""
    for dotted, problem in fields.problems(record, ranges=False):
        if problem.startswith("is missing"):
            if dotted in derived_names:
                continue
            raise RecordError(
                f"{source}: required field `{dotted}` is missing. Fix: delete it and run snakemake again."
            )
        raise _sense(source, dotted, problem)


def _check_version(record, source: str) -> None:
    if not isinstance(record, dict):
        raise RecordError(
            f"{source}: is a JSON {type(record).__name__}, not a run record (expected a JSON object). Fix: remove "
            "it from the runs/ folder (or from extra_runs), or delete it and rerun that run."
        )
    version = record.get("schema_version")
    if version is None and "timing" not in record:
        raise RecordError(
            f"{source}: is JSON but not a run record of this workflow (it has no schema_version and no timing). "
            "Fix: remove it from the runs/ folder it lies in (or that folder from extra_runs)."
        )
    if version in OLDER:
        raise RecordError(
            f"{source}: schema_version {version} was written by an earlier version of this workflow, "
            f"{OLDER[version]}; it cannot be compared with today's runs. Fix: delete it and run snakemake again "
            "to redo that run."
        )
    if version not in (*MIGRATED, run.SCHEMA_VERSION):
        raise RecordError(
            f"{source}: schema_version {version!r} is not supported (this workflow reads versions "
            f"{sorted((*MIGRATED, run.SCHEMA_VERSION))}). Fix: rerun that training job with this workflow "
            "(delete the file and run snakemake again), or aggregate it with the workflow "
            "version that wrote it."
        )


def _derived_view(record: dict, source: str) -> dict:
    """A version-4 record with its derived values computed (records/derived.py); it must store none."""
    if kept := derived.stored(record):
        raise _sense(
            source,
            kept[0],
            "is stored, but a version-4 record stores no derived value (each is computed when the record is read)",
        )
    try:
        return derived.derive(record)
    except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError, AttributeError) as exc:
        raise _sense(
            source, "(its raw values)", f"cannot give its derived values ({type(exc).__name__}: {exc})"
        ) from None


def check(record, source: str = "record") -> Record:
    """``record`` checked whole (a RecordError names the file, the field and the fix), as the reader gives it:
    read-only, every raw value and every derived one (computed here, for every version)."""
    _check_version(record, source)
    if bad := fields.non_finite(record):
        raise _sense(source, bad[0], f"is {bad[1]!r}, not a number a measurement can have")
    check_digest(record, source)  # the seal over the content as written, before anything is derived
    migrated = record["schema_version"] in MIGRATED
    _check_types(record, source, () if migrated else derived.NAMES)  # types first: the checks below read them
    _check_workload(record, source)  # from raw fields: what every derived FLOP count needs
    view = record
    if not migrated:
        view = _derived_view(record, source)
        _check_types(view, source, ())  # the derived values too
    check_names(view, source)
    check_names(view, source, "workload")
    _check_timing(view, source)
    _check_quality(view, source)
    _check_physics(view, source)
    _check_times(view, source)
    for dotted, problem in fields.problems(view):  # then every range, after the more telling checks above
        raise _sense(source, dotted, problem)
    for dotted, problem in invariants.problems(view)[:1]:  # last, the record as a whole (records/invariants.py)
        raise _sense(source, dotted, problem)
    # a version-3 record's stored derived values agree with its raw ones (checked above): computed again, so
    # that every version reads the same
    return frozen(derived.derive(view) if migrated else view)


def _check_workload(record: dict, source: str) -> None:
    """The workload spec must describe a network this workflow knows, and
    the FLOPs per step must be what that network costs."""
    try:
        workload = workloads.of(record["workload_spec"])
        flops = workload.training_step_flops(record["batch_size"])
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise _sense(source, "workload_spec", f"is {record['workload_spec']!r}, not a workload ({exc})") from None
    stored = (record.get("flops") or {}).get("per_step", flops)  # version 3 stored it; version 4 derives it
    if stored != flops:
        raise _sense(
            source,
            "flops.per_step",
            f"is {record['flops'].get('per_step')!r} but {workload.words()} "
            f"costs {flops} per step at batch size {record['batch_size']}",
        )


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12)


def _sense(source: str, field: str, problem: str) -> RecordError:
    return RecordError(
        f"{source}: `{field}` {problem}; the record is damaged or was not written by this workflow. "
        "Fix: delete it and run snakemake again to redo that run."
    )


def _check_timing(record: dict, source: str) -> None:
    t, epochs, warmup = record["timing"], record["epochs"], record["warmup_epochs"]
    epoch_s = t["epoch_s"]
    if len(epoch_s) != epochs or not all(_number(v) and 0 < v <= MAX_EPOCH_S for v in epoch_s):
        raise _sense(source, "timing.epoch_s", f"must hold {epochs} finite positive epoch times (each under a day)")
    if not 0 <= warmup < epochs:
        raise _sense(source, "warmup_epochs", f"is {warmup} with {epochs} epochs")
    if not _close(t["first_epoch_s"], epoch_s[0]):
        raise _sense(
            source, "timing.first_epoch_s", f"is {t['first_epoch_s']!r} but the first epoch took {epoch_s[0]!r}"
        )
    steady = epoch_s[warmup:]
    mean = math.fsum(steady) / len(steady)
    if not _close(t["steady_epoch_mean_s"], mean):
        raise _sense(
            source,
            "timing.steady_epoch_mean_s",
            f"is {t['steady_epoch_mean_s']!r} but the mean of the epochs after the warm-up is {mean!r}",
        )
    if record["samples_per_epoch"] <= 0 or not _close(t["samples_per_s"], record["samples_per_epoch"] / mean):
        raise _sense(
            source,
            "timing.samples_per_s",
            f"is {t['samples_per_s']!r}, not samples per epoch over the steady epoch time "
            f"({record['samples_per_epoch']} / {mean!r})",
        )
    if record["flops"]["achieved_per_s"] <= 0:
        raise _sense(source, "flops.achieved_per_s", "must be positive")


def _check_quality(record: dict, source: str) -> None:
    q = record["quality"]
    accuracies = q["epoch_val_accuracy"]
    if len(accuracies) != record["epochs"] or not all(_number(v) and 0 <= v <= 1 for v in accuracies):
        raise _sense(source, "quality.epoch_val_accuracy", f"must hold {record['epochs']} accuracies in [0, 1]")
    for field in ("test_accuracy", "val_accuracy"):
        if not 0 <= q[field] <= 1:
            raise _sense(source, f"quality.{field}", f"is {q[field]!r}, outside [0, 1]")


#: at least one of MNIST's 60,000 training images is kept for validation
MAX_SAMPLES_PER_EPOCH = 59_999


def _check_physics(record: dict, source: str) -> None:
    """Every measured quantity in its physical range."""
    if record["samples_per_epoch"] > MAX_SAMPLES_PER_EPOCH:
        raise _sense(source, "samples_per_epoch", f"is {record['samples_per_epoch']}, more than MNIST's training set")
    steps = record.get("steps_per_epoch")
    if steps is not None and steps * record["batch_size"] != record["samples_per_epoch"]:
        raise _sense(source, "samples_per_epoch", f"is not steps_per_epoch ({steps}) times batch_size")
    overhead = record.get("host_overhead") or {}
    for key in ("one_call_step_s", "compiled_step_s"):  # the share itself may be below 0: noise around none
        if key in overhead and not (_number(overhead[key]) and overhead[key] > 0):
            raise _sense(source, f"host_overhead.{key}", f"is {overhead[key]!r}; a step takes a positive time")


def _check_times(record: dict, source: str) -> None:
    import datetime as dt

    for key in ("started_at", "finished_at"):
        value = record.get(key)
        try:
            when = dt.datetime.fromisoformat(value) if value is not None else None
        except (TypeError, ValueError):
            raise _sense(source, key, f"is {value!r}, not an ISO 8601 time") from None
        if when is not None and when.utcoffset() is None:  # naive and aware times cannot be compared
            raise _sense(source, key, f"is {value!r}, a time without its offset (this workflow writes UTC times)")


def check_place(record: dict, path) -> None:
    """A record must say what its place in the runs/ tree says."""
    m = run.place_of(path)
    if m is None:
        return
    for key in ("workload", "device", "batch_size", "seed"):
        said = record.get(key)
        if str(said) != m[key]:
            raise RecordError(
                f"{path}: says {key} {said!r} but lies in the folder of {key} {m[key]} (copied or renamed into the "
                "wrong place). Fix: move it back to the folder its content names (runs/<workload>/<device>/"
                "bs<batch>/seed<seed>.json), or delete it and rerun that run."
            )


def load(path) -> dict:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RecordError(
            f"{path}: is not text (binary or damaged), so not a run record. Fix: delete it and run snakemake again "
            "to redo that run."
        ) from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot be read ({exc}). Fix: check the file's permissions, or delete it.") from exc
    try:
        record = decode(text)  # NaN and Infinity are read, so that check() names their field
    except json.JSONDecodeError as exc:
        raise RecordError(
            f"{path}: is not valid JSON ({exc.msg} at line {exc.lineno}); the file is truncated "
            "or was edited by hand. Fix: delete it and run snakemake again to redo that run."
        ) from None
    except ValueError as exc:
        raise RecordError(f"{path}: {exc}, so not a run record. Fix: delete it and run snakemake again.") from None
    record = check(record, str(path))
    check_place(record, path)
    return record
