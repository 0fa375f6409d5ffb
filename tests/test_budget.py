"""Issue 39 (1): the time budget, its estimates, its notes, and what the report says of them (unit level; the
real workflow under a budget, with a planted slow device, is tests/test_budget_workflow.py)."""

import datetime as dt
import json

import pandas as pd
import pytest

from conftest import make_record, write_records
from mnist_speedup.analysis import aggregate
from mnist_speedup.config import parse as config_check
from mnist_speedup.measure import budget, progress
from mnist_speedup.records import bundle, cuts
from mnist_speedup.report.sections import budget as budget_section
from mnist_speedup.spec import run

START = dt.datetime(2026, 12, 7, 3, 0, tzinfo=dt.UTC)


def timed(device, batch_size, seed, run_s, before_s=4.0, lock_wait_s=1.0, **kw):
    """A record whose job took ``before_s - lock_wait_s + run_s`` seconds."""
    started = START + dt.timedelta(minutes=seed)
    return make_record(device, batch_size, seed, setup_s={"before_run_s": before_s}, lock_wait_s=lock_wait_s,
                       started_at=started.isoformat(), finished_at=(started + dt.timedelta(seconds=run_s)).isoformat(),
                       **kw)  # fmt: skip


def spec(device="slow", batch_size=100, seed=2, workload="mlp", workload_spec=None):
    return run.RunSpec.with_defaults(workload=workload, workload_spec=workload_spec or {"type": "mlp"},
                                     device=device, device_spec={"type": "cpu", "threads": 1},
                                     batch_size=batch_size, seed=seed, epochs=3)  # fmt: skip


def environ(budget_s=600):
    return {budget.BUDGET: str(budget_s), progress.START: START.isoformat()}


def test_a_run_s_duration_is_its_job_less_the_lock_wait():
    assert budget.duration_s(timed("cpu", 100, 1, run_s=10.0)) == pytest.approx(13.0)
    assert budget.duration_s({"started_at": "x"}) is None


def test_the_estimate_takes_the_most_specific_record_there_is(tmp_path):
    write_records(tmp_path, [timed("slow", 100, 1, 20.0), timed("slow", 500, 1, 40.0), timed("fast", 100, 1, 2.0)])
    same_cell = budget.estimate(spec(batch_size=100), tmp_path)
    assert same_cell.seconds == pytest.approx(budget.SAFETY * 23.0) and same_cell.basis == budget.BASES["cell"]
    other_batch = budget.estimate(spec(batch_size=2000), tmp_path)
    assert (
        other_batch.seconds == pytest.approx(budget.SAFETY * 43.0) and other_batch.basis == budget.BASES["batch size"]
    )
    cnn = budget.estimate(spec(workload="cnn", workload_spec={"type": "cnn"}), tmp_path)
    assert cnn.seconds > budget.SAFETY * 43.0 and cnn.basis == budget.BASES["workload"]  # a CNN costs more per sample
    first = budget.estimate(spec(device="new"), tmp_path)
    assert first.seconds is None and first.basis == budget.BASES["none"]


def test_a_planted_slow_device_is_cut_and_a_fast_one_is_not(tmp_path):
    """The slow device's earlier run took an hour: its next run cannot fit in 600 s; the fast one's can."""
    write_records(tmp_path, [timed("slow", 100, 1, 3600.0), timed("fast", 100, 1, 5.0)])
    now = START.timestamp() + 100
    why = budget.cut(spec("slow"), tmp_path, now, environ())
    assert why["budget_s"] == 600 and why["left_s"] == pytest.approx(500)
    assert why["estimate_s"] == pytest.approx(budget.SAFETY * 3603.0, abs=0.01)
    assert budget.cut(spec("fast"), tmp_path, now, environ()) is None
    assert budget.cut(spec("slow"), tmp_path, now, {}) is None  # no budget: everything runs
    assert budget.cut(spec("new"), tmp_path, now, environ()) is None  # a first run starts while time is left
    assert budget.cut(spec("new"), tmp_path, START.timestamp() + 601, environ())["estimate_s"] is None


def test_a_note_round_trips_and_is_never_read_as_a_record(tmp_path):
    write_records(tmp_path, [timed("fast", 100, 1, 5.0)])
    path = run.run_path(tmp_path, "mlp", "slow", 100, 2)
    why = {"budget_s": 600, "left_s": 12.5, "estimate_s": 40.0, "basis": "b"}
    cuts.write(path, spec().params(), **why)
    assert cuts.read(path) == {cuts.MARK: why, "workload": "mlp", "device": "slow", "batch_size": 100, "seed": 2}
    kept, cut = cuts.split(run.run_files(tmp_path))
    assert [p.name for p in kept] == ["seed1.json"] and len(cut) == 1
    summary, _ = aggregate.load_runs(run.run_files(tmp_path))
    assert list(summary.device) == ["fast"]
    assert aggregate.cut_runs(run.run_files(tmp_path)).to_dict("records") == [
        {"workload": "mlp", "batch_size": 100, "device": "slow", "seed": 2, **why}
    ]
    assert path not in bundle.bundle_files(tmp_path)
    assert budget.estimate(spec(), tmp_path).seconds is None  # a note is not a finished run
    assert cuts.clear(tmp_path) == [path] and not path.exists() and len(run.run_files(tmp_path)) == 1


@pytest.mark.parametrize(
    "change, problem",
    [({"seed": 3}, "another run than its path"), ({"extra": 1}, "other fields"),
     ({cuts.MARK: {"budget_s": "600", "left_s": 1, "estimate_s": None, "basis": "b"}}, "`budget_s`")],
)  # fmt: skip
def test_a_note_that_is_not_what_the_job_writes_is_refused(tmp_path, change, problem):
    path = run.run_path(tmp_path, "mlp", "slow", 100, 2)
    cuts.write(path, spec().params(), budget_s=600, left_s=1, estimate_s=None, basis="b")
    path.write_text(json.dumps(json.loads(path.read_text()) | change))
    with pytest.raises(cuts.CutError, match=problem):
        cuts.read(path)


def test_every_run_cut_names_the_budget_in_the_error(tmp_path):
    path = run.run_path(tmp_path, "mlp", "slow", 100, 2)
    cuts.write(path, spec().params(), budget_s=5, left_s=-1, estimate_s=None, basis="b")
    with pytest.raises(Exception, match="the time budget cut all 1 runs"):
        aggregate.load_runs([path])


class _Report:
    def __init__(self, cut):
        self.tables = type("T", (), {"cut": cut})()


def test_the_report_names_each_cut_cell_and_says_nothing_without_cuts():
    rows = [{"workload": "cnn", "batch_size": 100, "device": "cpu", "seed": s, "budget_s": 420, "left_s": 3.0,
             "estimate_s": 95.0, "basis": "its longest earlier run of this cell (1 finished)"} for s in (2, 3)]  # fmt: skip
    text = "\n".join(budget_section.render(_Report(pd.DataFrame(rows))))
    assert "## Cut by the time budget" in text and "420 s cut 2 runs in 1 cell:" in text
    assert "| cnn | 100 | cpu | 2, 3 | 95 |" in text
    assert budget_section.render(_Report(pd.DataFrame())) == []


def test_a_time_budget_with_replication_is_refused_at_parse_time():
    from test_config_errors import parsed, with_

    with pytest.raises(config_check.ConfigError, match=r"config key `time_budget_s`: a time budget with replication"):
        parsed(with_(time_budget_s=300, replication={"ci_half_width": 0.1, "max_seeds": 8}))
    assert parsed(with_(time_budget_s=300))["time_budget_s"] == 300


def test_a_time_budget_is_refused_with_a_cluster_executor():
    config = {"time_budget_s": 420.0}
    with pytest.raises(config_check.ConfigError, match=r"config key `time_budget_s`.*Fix: leave time_budget_s out"):
        config_check.check_executor(config, local=False)
    config_check.check_executor(config, local=True)
