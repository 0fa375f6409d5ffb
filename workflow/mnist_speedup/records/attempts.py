"""Attempts: what became of each planned run, in a small file of its own beside the records.

The training job's declared output is its attempt file
(``results/<experiment>/attempts/<workload>/<device>/bs<N>/seed<S>.json``),
never the record. A run that finished writes its record under ``runs/``
first, then an attempt that says so; a run the time budget cut
(config ``time_budget_s``, measure/budget.py) writes only an attempt that
says why, and nothing under ``runs/``. So every reader of ``runs/`` reads
records only, and the aggregation, figures, report and bundle of what did
run still follow in the same invocation.

A cut run is planned again by the next invocation without deleting
anything: each attempt carries its number, and the training rule's
``attempt`` param is the number the next attempt of that run would have
(:func:`number_to_plan`, which only reads). For a finished run whose
record is still there it is the attempt's own number, so nothing changes;
for a cut run (or a finished one whose record was deleted) it is one more,
and Snakemake reruns a job whose params changed (its default rerun
triggers; with ``--rerun-triggers mtime`` alone a cut run stays cut).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from mnist_speedup import atomic
from mnist_speedup.records import jsontext
from mnist_speedup.spec import run

#: where a run's attempt lives under an experiment's results folder
ATTEMPT_PATH = "attempts/" + run.RUN_PATH.removeprefix("runs/")
FINISHED, CUT = "finished", "cut"
#: an attempt is a few hundred bytes; a larger file is not one, and is never read whole
MAX_BYTES = 4096
#: what a cut's attempt says, beside the run's place
CUT_FIELDS = {
    "budget_s": "the invocation's time budget",
    "left_s": "seconds of it left when the run would have started",
    "estimate_s": "the run's estimated duration (null: none could be made)",
    "basis": "what the estimate comes from",
}
PLACE = ("workload", "device", "batch_size", "seed")


class AttemptError(ValueError):
    pass


def attempt_path(results_dir, workload: str, device: str, batch_size: int, seed: int) -> Path:
    return Path(results_dir, ATTEMPT_PATH.format(workload=workload, device=device, batch_size=batch_size, seed=seed))


def record_path_of(path) -> Path:
    """The record path of the run an attempt at ``path`` belongs to."""
    path = Path(path)
    depth = ATTEMPT_PATH.count("/")
    return Path(path.parents[depth], "runs", *path.parts[-depth:])


def write_finished(path, number: int) -> dict:
    """The attempt of a run whose record was written (atomically, after the record)."""
    return _write(path, {"attempt": number, "outcome": FINISHED})


def write_cut(path, spec_params: dict, number: int, why: dict) -> dict:
    """The attempt of a run the time budget cut (``why``: :data:`CUT_FIELDS`)."""
    place = {k: spec_params[k] for k in PLACE}
    return _write(path, {"attempt": number, "outcome": CUT, **place, "cut": {k: why[k] for k in CUT_FIELDS}})


def _write(path, attempt: dict) -> dict:
    atomic.write_text(path, json.dumps(attempt, indent=1, allow_nan=False) + "\n")
    return attempt


def _refuse(path, problem: str) -> AttemptError:
    return AttemptError(f"{path}: {problem}. Fix: delete it; its run is then planned again.")


def read(path) -> dict:
    """The attempt at ``path``, checked (:class:`AttemptError` names the problem and the fix)."""
    path = Path(path)
    if not path.exists():
        raise AttemptError(f"{path} does not exist: its run was not attempted yet. Fix: run the workflow.")
    try:
        if path.stat().st_size > MAX_BYTES:
            raise _refuse(path, f"an attempt file of over {MAX_BYTES} bytes")
        data = jsontext.decode(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _refuse(path, f"not a readable attempt ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict) or data.get("outcome") not in (FINISHED, CUT):
        raise _refuse(path, "not an attempt (no outcome `finished` or `cut`)")
    number = data.get("attempt")
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise _refuse(path, f"its `attempt` is {number!r}, not a count")
    if data["outcome"] == FINISHED:
        if set(data) != {"attempt", "outcome"}:
            raise _refuse(path, "a finished attempt with other fields than one has")
        return data
    _check_cut(path, data)
    return data


def _check_cut(path: Path, data: dict) -> None:
    place, why = run.place_of(record_path_of(path)), data.get("cut")
    if set(data) != {"attempt", "outcome", "cut", *PLACE} or not isinstance(why, dict) or set(why) != set(CUT_FIELDS):
        raise _refuse(path, "a cut attempt with other fields than one has")
    if place is None or {k: str(data[k]) for k in place} != place:
        raise _refuse(path, "a cut attempt for another run than its path names")
    for key in ("budget_s", "left_s", "estimate_s"):
        value = why[key]
        if value is None and key == "estimate_s":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _refuse(path, f"`{key}` of a cut attempt is {value!r}, not a number")
    if not isinstance(why["basis"], str) or len(why["basis"]) > 500:
        raise _refuse(path, "the `basis` of a cut attempt is not a short text")


def split(paths) -> tuple[list[Path], list[dict]]:
    """(the records of the finished runs, the cut attempts) of the attempt files ``paths``."""
    records, cut = [], []
    for path in paths:
        attempt = read(path)
        if attempt["outcome"] == CUT:
            cut.append(attempt)
            continue
        record = record_path_of(path)
        if not record.is_file():
            raise AttemptError(
                f"{path} says its run finished, but its record {record} is missing. "
                "Fix: run the workflow again, which plans that run again."
            )
        records.append(record)
    return records, cut


def number_to_plan(path) -> int:
    """The number of the run's next attempt where it must run again, else its last one's (read only):
    0 with no attempt yet; the attempt's own number where it finished and its record is there;
    one more where it was cut, its record is gone, or the file is not an attempt."""
    path = Path(path)
    if not path.exists():
        return 0
    try:
        attempt = read(path)
    except AttemptError:
        return _number_in(path) + 1
    if attempt["outcome"] == FINISHED and record_path_of(path).is_file():
        return attempt["attempt"]
    return attempt["attempt"] + 1


def _number_in(path: Path) -> int:
    """The attempt number a damaged file still shows (0 where none): so that its run is planned again."""
    try:
        number = jsontext.decode(path.read_text(encoding="utf-8"))["attempt"]
        return number if isinstance(number, int) and not isinstance(number, bool) and number >= 0 else 0
    except (OSError, ValueError, TypeError, KeyError):
        return 0


def rows(cut: list[dict]) -> list[dict]:
    """One table row per cut run, in run order."""
    flat = [{k: n[k] for k in PLACE} | n["cut"] for n in cut]
    return sorted(flat, key=lambda r: (r["workload"], r["batch_size"], r["device"], r["seed"]))
