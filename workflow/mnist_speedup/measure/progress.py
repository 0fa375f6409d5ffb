"""One console line per finished training run, with the time left.

The workflow sets two environment variables when it is parsed (in the
main Snakemake process; jobs inherit them): when this invocation started
and how many runs the experiment has. The time left is estimated from the
runs that finished in this invocation only, never from older records.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from mnist_speedup.records import cuts
from mnist_speedup.spec.run import run_files

START = "MNIST_SPEEDUP_INVOCATION_START"
TOTAL = "MNIST_SPEEDUP_TOTAL_RUNS"
#: set (non-empty) when replication may stop before TOTAL: the total is an upper bound
AT_MOST = "MNIST_SPEEDUP_AT_MOST"


def _time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def _records(results_dir: Path) -> list[dict]:
    out = []
    for path in run_files(results_dir):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and cuts.MARK not in data:  # a run the time budget cut is not a run done
            out.append(data)
    return out


def time_left_s(records: list[dict], total: int, since: dt.datetime) -> float | None:
    """Mean duration of this invocation's runs times the runs still to do."""
    durations = []
    for r in records:
        try:
            started, finished = _time(r["started_at"]), _time(r["finished_at"])
        except (KeyError, TypeError, ValueError):
            continue
        if finished >= since:
            durations.append((finished - started).total_seconds())
    if not durations:
        return None
    return max(0, total - len(records)) * sum(durations) / len(durations)


def line(record: dict, label: str, results_dir: Path, environ=os.environ) -> str:
    """``mlp, cpu (2 threads), batch 500, seed 2: 9.37 s/epoch, 91.9% test
    accuracy [5 of 12 runs, about 14 min left]``"""
    head = (
        f"{record['workload']}, {label}, batch {record['batch_size']}, seed {record['seed']}: "
        f"{record['timing']['steady_epoch_mean_s']:.2f} s/epoch, "
        f"{record['quality']['test_accuracy']:.1%} test accuracy"
    )
    try:
        total, since = int(environ[TOTAL]), _time(environ[START])
    except (KeyError, ValueError):
        return head
    records = _records(results_dir)
    left = time_left_s(records, total, since)
    at_most = bool(environ.get(AT_MOST))
    if len(records) >= total:
        when = "the last run"
    elif left is None:
        when = "time left not known yet"
    else:
        when = f"{'at most ' if at_most else ''}about {max(1, round(left / 60))} min left"
    of = f"of at most {total}" if at_most else f"of {total}"
    return f"{head} [{len(records)} {of} runs, {when}]"


def cut_line(spec, why: dict) -> str:
    """``mlp, cpu, batch 100, seed 3: cut by the time budget (12 s left, the run takes about 40 s)``"""
    takes = (
        "its duration cannot be estimated" if why["estimate_s"] is None else f"it takes about {why['estimate_s']:.0f} s"
    )
    return (
        f"{spec.workload}, {spec.device}, batch {spec.batch_size}, seed {spec.seed}: not started, cut by the "
        f"time budget of {why['budget_s']:g} s ({max(0.0, why['left_s']):.0f} s left; {takes})"
    )
