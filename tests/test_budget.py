"""Issue 39 (1) and house 4 (2, 3): the time budget, its estimates, the attempts of cut runs, the call's own
invocation file, and what the report says of them (unit level; the real workflow under a budget is
tests/test_budget_workflow.py)."""

import datetime as dt
import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from crafted import make_record, write_records
from mnist_speedup.analysis import aggregate
from mnist_speedup.config import parse as config_check
from mnist_speedup.measure import budget, invocation
from mnist_speedup.records import attempts
from mnist_speedup.report.sections import budget as budget_section
from mnist_speedup.spec import run, workloads

START = dt.datetime(2026, 12, 7, 3, 0, tzinfo=dt.UTC)
WHY = {"budget_s": 600, "left_s": 12.5, "estimate_s": 40.0, "basis": "b"}


def timed(device, batch_size, seed, run_s, before_s=4.0, lock_wait_s=1.0, **kw):
    """A record whose job took ``before_s - lock_wait_s + run_s`` seconds."""
    started = START + dt.timedelta(minutes=seed)
    return make_record(
        device,
        batch_size,
        seed,
        setup_s={"before_run_s": before_s},
        lock_wait_s=lock_wait_s,
        started_at=started.isoformat(),
        finished_at=(started + dt.timedelta(seconds=run_s)).isoformat(),
        **kw,
    )


def spec(device="slow", batch_size=100, seed=2, workload="mlp", workload_spec=None, epochs=3):
    """The spec of a run of the same plan as :func:`timed`'s records (make_record's settings)."""
    workload_spec = workload_spec or {"type": "mlp"}
    workload_spec = workloads.of(workload_spec).with_defaults(workload_spec)  # as the config's parse resolves it
    return run.RunSpec.with_defaults(
        workload=workload,
        workload_spec=workload_spec,
        device=device,
        device_spec={"type": "cpu", "threads": 1},
        batch_size=batch_size,
        seed=seed,
        epochs=epochs,
        train_samples=None,
        learning_rate=1e-4,
        steps_per_call="epoch",
        input_pipeline="device",
        deterministic=False,
        warmup_epochs=1,
    )


def known(tmp_path, records):
    """The known runs of ``records`` as a call's onstart handler notes them (measure/budget.py)."""
    paths = write_records(tmp_path, records)
    plan = [attempts.attempt_path(tmp_path, r["workload"], r["device"], r["batch_size"], r["seed"]) for r in records]
    assert [attempts.record_path_of(p) for p in plan] == paths
    return budget.known_runs(plan)


def call(budget_s=600, known_runs=(), plan=()):
    return invocation.Invocation(
        START.timestamp(), budget_s, os.getppid(), tuple(map(str, plan)), False, tuple(known_runs)
    )


def test_a_run_s_duration_is_its_job_less_the_lock_wait():
    assert budget.duration_s(timed("cpu", 100, 1, run_s=10.0)) == pytest.approx(13.0)
    assert budget.duration_s({"started_at": "x"}) is None


def test_the_estimate_takes_the_most_specific_record_there_is(tmp_path):
    runs = known(tmp_path, [timed("slow", 100, 1, 20.0), timed("slow", 500, 1, 40.0), timed("fast", 100, 1, 2.0)])
    same_cell = budget.estimate(spec(batch_size=100), runs)
    assert same_cell.seconds == pytest.approx(budget.SAFETY * 23.0) and same_cell.basis == budget.BASES["cell"]
    other_batch = budget.estimate(spec(batch_size=2000), runs)
    assert other_batch.seconds == pytest.approx(budget.SAFETY * 43.0)
    assert other_batch.basis == budget.BASES["batch size"]
    cnn = budget.estimate(spec(workload="cnn", workload_spec={"type": "cnn"}), runs)
    assert cnn.seconds > budget.SAFETY * 43.0 and cnn.basis == budget.BASES["scaled"]  # a CNN costs more per sample
    first = budget.estimate(spec(device="new"), runs)
    assert first.seconds is None and first.basis == budget.BASES["none"]


def test_a_run_of_other_settings_is_scaled_by_its_epochs_not_taken_as_it_is(tmp_path):
    """House 4 (3): after `epochs` went from 3 to 200, a 3-epoch record estimated a 200-epoch run at its own
    5.5 s, and the call overran its budget by 65 s. Now: its training part times 200/3, its start as it was.
    Planted once: `_same_plan` true for any settings failed here."""
    runs = known(tmp_path, [timed("slow", 100, 1, run_s=3.0, before_s=3.5, lock_wait_s=1.0)])  # a 5.5 s job
    guess = budget.estimate(spec(epochs=200), runs)
    assert guess.basis == budget.BASES["scaled"]
    assert guess.seconds == pytest.approx(budget.SAFETY * (2.5 + 3.0 * 200 / 3))
    assert budget.estimate(spec(epochs=3), runs).seconds == pytest.approx(budget.SAFETY * 5.5)


def test_a_planted_slow_device_is_cut_and_a_fast_one_is_not(tmp_path):
    """The slow device's earlier run took an hour: its next run cannot fit in 600 s; the fast one's can."""
    runs = known(tmp_path, [timed("slow", 100, 1, 3600.0), timed("fast", 100, 1, 5.0)])
    now = START.timestamp() + 100
    why = budget.cut(spec("slow"), call(known_runs=runs), now)
    assert why["budget_s"] == 600 and why["left_s"] == pytest.approx(500)
    assert why["estimate_s"] == pytest.approx(budget.SAFETY * 3603.0, abs=0.01)
    assert budget.cut(spec("fast"), call(known_runs=runs), now) is None
    assert budget.cut(spec("slow"), call(budget_s=None, known_runs=runs), now) is None  # no budget: all run
    assert budget.cut(spec("slow"), None, now) is None  # no invocation of its own call: no budget
    assert budget.cut(spec("new"), call(known_runs=runs), now) is None  # a first run starts while time is left
    assert budget.cut(spec("new"), call(known_runs=runs), START.timestamp() + 601)["estimate_s"] is None


def test_a_run_finished_in_the_call_counts_beside_those_known_at_its_start(tmp_path):
    """The estimate reads the records at the plan's paths too (runs finished since the call started)."""
    plan = [attempts.attempt_path(tmp_path, "mlp", "slow", 100, 1)]
    assert budget.cut(spec("slow"), call(plan=plan), START.timestamp() + 100) is None  # nothing known yet
    write_records(tmp_path, [timed("slow", 100, 1, 3600.0)])
    assert budget.cut(spec("slow"), call(plan=plan), START.timestamp() + 100)["basis"] == budget.BASES["cell"]


def test_a_cut_attempt_round_trips_and_leaves_nothing_under_runs(tmp_path):
    write_records(tmp_path, [timed("fast", 100, 1, 5.0)])
    done = attempts.attempt_path(tmp_path, "mlp", "fast", 100, 1)
    attempts.write_finished(done, 0)
    cut = attempts.attempt_path(tmp_path, "mlp", "slow", 100, 2)
    attempts.write_cut(cut, spec().params(), 3, WHY)
    assert attempts.read(cut) == {
        "attempt": 3,
        "outcome": "cut",
        "workload": "mlp",
        "device": "slow",
        "batch_size": 100,
        "seed": 2,
        "cut": WHY,
    }
    records, cuts = attempts.split([done, cut])
    assert records == [run.run_path(tmp_path, "mlp", "fast", 100, 1)] and len(cuts) == 1
    assert [p.name for p in run.run_files(tmp_path)] == ["seed1.json"]  # nothing of the cut run under runs/
    summary, _ = aggregate.load_runs(records)
    assert list(summary.device) == ["fast"]
    assert aggregate.cut_runs(cuts).to_dict("records") == [
        {"workload": "mlp", "batch_size": 100, "device": "slow", "seed": 2, **WHY}
    ]


def test_a_cut_run_is_planned_again_and_a_finished_one_is_not(tmp_path):
    """The training rule's `attempt` param (records/attempts.py): read only; a changed value reruns the job."""
    path = attempts.attempt_path(tmp_path, "mlp", "cpu", 100, 1)
    assert attempts.number_to_plan(path) == 0  # no attempt yet
    attempts.write_cut(path, spec(device="cpu", seed=1).params(), 0, WHY)
    assert attempts.number_to_plan(path) == 1  # cut: the next attempt
    write_records(tmp_path, [timed("cpu", 100, 1, 5.0)])
    attempts.write_finished(path, 1)
    before = path.read_bytes()
    assert attempts.number_to_plan(path) == 1 and path.read_bytes() == before  # finished: as it ran
    attempts.record_path_of(path).unlink()
    assert attempts.number_to_plan(path) == 2  # its record deleted: run again
    path.write_text('{"attempt": 4, "outcome": "maybe"}')
    assert attempts.number_to_plan(path) == 5  # not an attempt: run again


def test_a_finished_attempt_without_its_record_is_refused_with_the_fix(tmp_path):
    path = attempts.attempt_path(tmp_path, "mlp", "cpu", 100, 1)
    attempts.write_finished(path, 0)
    with pytest.raises(attempts.AttemptError, match="its record .* is missing. Fix: run the workflow again"):
        attempts.split([path])


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"seed": 3}, "another run than its path"),
        ({"extra": 1}, "other fields"),
        ({"cut": WHY | {"budget_s": "600"}}, "`budget_s`"),
        ({"attempt": -1}, "not a count"),
        ({"outcome": "done"}, "not an attempt"),
    ],
)
def test_an_attempt_that_is_not_what_the_job_writes_is_refused(tmp_path, change, problem):
    path = attempts.attempt_path(tmp_path, "mlp", "slow", 100, 2)
    attempts.write_cut(path, spec().params(), 0, WHY)
    path.write_text(json.dumps(json.loads(path.read_text()) | change))
    with pytest.raises(attempts.AttemptError, match=problem + ".*Fix: delete it"):
        attempts.read(path)


def test_every_run_cut_names_the_budget_in_the_error(tmp_path):
    path = attempts.attempt_path(tmp_path, "mlp", "slow", 100, 2)
    attempts.write_cut(path, spec().params(), 0, WHY)
    records, cut = attempts.split([path])
    with pytest.raises(Exception, match="the time budget cut all 1 runs"):
        aggregate.load_runs(records, n_cut=len(cut))


def test_the_invocation_file_is_read_only_by_its_own_call_s_jobs(tmp_path):
    """House 4 (2): a start left by another call (a stale file, or a process that is not this job's
    ancestor) never reaches a job: it gets no budget instead of one that cuts every run at once."""
    path = tmp_path / "invocation.json"
    assert invocation.current(path)[0] is None and "does not exist" in invocation.current(path)[1]
    mine = call(plan=["a.json"], known_runs=[{"device": "d"}])
    invocation.write(path, mine)
    assert invocation.current(path) == (mine, "")  # written by this process's parent: its call
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        invocation.write(path, invocation.Invocation(1.0, 5.0, other.pid, ()))
        found, why = invocation.current(path)
        assert found is None and f"process {other.pid} is not this job's" in why
    finally:
        other.kill()
    path.write_text(
        '{"started_at": "nan", "budget_s": 5, "pid": 1, "attempts": [], "at_most": false, "known_runs": []}'
    )
    assert invocation.current(path)[0] is None


class _Report:
    def __init__(self, cut):
        self.tables = type("T", (), {"cut": cut})()


def test_the_report_names_each_cut_cell_and_says_nothing_without_cuts():
    rows = [
        {
            "workload": "cnn",
            "batch_size": 100,
            "device": "cpu",
            "seed": s,
            "budget_s": 420,
            "left_s": 3.0,
            "estimate_s": 95.0,
            "basis": "its longest earlier run of this cell (1 finished)",
        }
        for s in (2, 3)
    ]
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
