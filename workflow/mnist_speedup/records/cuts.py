"""Runs cut by the time budget (config ``time_budget_s``): a note where the record would be.

A training job that cannot finish before the budget ends does not start
its run; it writes this note at the run's record path instead, so that
the aggregation, figures, report and bundle of everything that did run
still follow in the same invocation, and the report names what was cut.
A note is not a measurement: nothing reads it as a record, and a bundle
never carries it.

The next invocation plans a cut run again: the workflow, when parsed in
Snakemake's main process, removes the notes of earlier invocations
(:func:`clear`), so their runs are missing and run (under that
invocation's own budget, if it has one).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from mnist_speedup import atomic
from mnist_speedup.spec import run

#: the one key of a note that no record has
MARK = "cut_by_time_budget"
#: a note is a few hundred bytes; anything larger is a record, never read whole here
MAX_NOTE_BYTES = 4096
#: what a note says, beside the run's place
FIELDS = {"budget_s": "the invocation's time budget", "left_s": "seconds of it left when the run would have started",
          "estimate_s": "the run's estimated duration (null: none could be made)",
          "basis": "what the estimate comes from"}  # fmt: skip


class CutError(ValueError):
    pass


def note(spec_params: dict, *, budget_s: float, left_s: float, estimate_s: float | None, basis: str) -> dict:
    """The note of one cut run (``spec_params``: its RunSpec as params)."""
    place = {k: spec_params[k] for k in ("workload", "device", "batch_size", "seed")}
    return {MARK: {"budget_s": budget_s, "left_s": left_s, "estimate_s": estimate_s, "basis": basis}, **place}


def write(path, spec_params: dict, **why) -> dict:
    """Write the note atomically at a run's record ``path``; returns it."""
    cut = note(spec_params, **why)
    atomic.write_text(path, json.dumps(cut, indent=2, allow_nan=False) + "\n")
    return cut


def read(path) -> dict | None:
    """The note at ``path``, checked; None where the file is a record (or anything else)."""
    path = Path(path)
    if path.stat().st_size > MAX_NOTE_BYTES:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or MARK not in data:
        return None
    _check(data, path)
    return data


def _check(data: dict, path) -> None:
    place, why = run.place_of(path), data[MARK]
    if (
        set(data) != {MARK, "workload", "device", "batch_size", "seed"}
        or not isinstance(why, dict)
        or set(why) != set(FIELDS)
    ):
        raise CutError(f"{path}: a time-budget note with other fields than a note has. Fix: delete it and rerun.")
    if place is None or {k: str(data[k]) for k in place} != place:
        raise CutError(f"{path}: a time-budget note for another run than its path names. Fix: delete it and rerun.")
    for key in ("budget_s", "left_s", "estimate_s"):
        value = why[key]
        if value is None and key == "estimate_s":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise CutError(f"{path}: `{key}` of a time-budget note is {value!r}, not a number. Fix: delete it.")
    if not isinstance(why["basis"], str) or len(why["basis"]) > 500:
        raise CutError(f"{path}: the `basis` of a time-budget note is not a short text. Fix: delete it.")


def split(paths) -> tuple[list[Path], list[dict]]:
    """(the record paths, the notes) among ``paths``."""
    kept, cut = [], []
    for path in paths:
        found = read(path)
        if found is None:
            kept.append(Path(path))
        else:
            cut.append(found)
    return kept, cut


def clear(results_dir) -> list[Path]:
    """Remove the notes an earlier invocation left, so that their runs are planned again."""
    removed = []
    for path in run.run_files(results_dir):
        if read(path) is not None:
            path.unlink()
            removed.append(path)
    return removed


def rows(notes: list[dict]) -> list[dict]:
    """One table row per cut run, in run order."""
    flat = [{k: n[k] for k in ("workload", "device", "batch_size", "seed")} | n[MARK] for n in notes]
    return sorted(flat, key=lambda r: (r["workload"], r["batch_size"], r["device"], r["seed"]))
