"""House 4 (2, 3): the time budget through the real `snakemake`: a config change that makes runs longer
is estimated from the old runs scaled, not taken as they were; a cut run leaves nothing under runs/ and is
planned again without anything deleted; parsing (a dry run, --lint, --report) changes no file under results/;
a second call beside a running one deletes nothing of it."""

import datetime as dt
import hashlib
import json
import subprocess
import sys
import time

import pytest

from conftest import plan_config, snakemake, synthetic_workdir
from mnist_speedup.measure import invocation
from mnist_speedup.records import attempts
from mnist_speedup.spec import run

pytestmark = pytest.mark.slow

#: the default MLP (its epochs take 0.06-0.1 s here on the synthetic data): 600 epochs are about 40 s a run
LONG = {"epochs": 600, "time_budget_s": 20}


def tree(folder):
    """Every file under ``folder`` with its bytes' digest."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """Epochs 3 (4 runs), then 600 with a 20-s budget: the runs of 3 epochs are the only ones known."""
    workdir, cfg, config = synthetic_workdir(tmp_path_factory.mktemp("budget"), epochs=3)
    snakemake(workdir, "--cores", "2", "--configfile", str(cfg))
    short = tree(workdir / "results")
    long_cfg = workdir / "config" / "long.yaml"
    long_cfg.write_text(json.dumps(config | LONG))
    started = time.time()
    proc = snakemake(workdir, "--cores", "2", "--configfile", str(long_cfg), check=False)
    return workdir, config, long_cfg, proc, started, short


def test_epochs_3_then_600_with_a_budget_ends_within_it(replayed):
    """The 3-epoch records scaled by 200 estimate each run far over 20 s: all four are cut, none starts and
    overruns (before: each took a 3-epoch run's 5 s as its estimate). Planted once: the estimate's `same plan`
    true for any settings failed here (a run started, and ended after the deadline)."""
    workdir, _, _, proc, started, _ = replayed
    call = invocation.read(workdir / "logs" / "default" / "invocation.json")
    assert started <= call.started_at + 5 and call.budget_s == LONG["time_budget_s"]
    finished = [json.loads(p.read_text()) for p in run.run_files(workdir / "results" / "default")]
    late = [
        r["finished_at"] for r in finished if dt.datetime.fromisoformat(r["finished_at"]).timestamp() > call.deadline()
    ]
    assert late == []
    outcomes = [attempts.read(workdir / p)["outcome"] for p in call.attempts]
    assert outcomes == ["cut"] * 4, proc.stderr
    assert finished == []  # a cut run leaves nothing under runs/ (the 3-epoch records went with their reruns)
    assert "no run records to aggregate (the time budget cut all 4 runs; give it more seconds)" in proc.stderr
    basis = {attempts.read(workdir / p)["cut"]["basis"] for p in call.attempts}
    assert basis == {"the device's nearest run of another plan, scaled by epochs x samples x FLOPs per sample"}


def test_parsing_changes_no_file_under_results(replayed):
    """A dry run, --lint and --report, after a call whose budget cut runs: results/ byte for byte as it was,
    and the call's invocation file too (before: parsing deleted the cut runs' notes and set the jobs' start)."""
    workdir, _, long_cfg, _, _, _ = replayed
    before, logs = tree(workdir / "results"), tree(workdir / "logs")
    for args in (["-n"], ["--lint"], ["--report", str(workdir.parent / "report.html")]):
        snakemake(workdir, "--cores", "2", "--configfile", str(long_cfg), *args, check=False)
    assert tree(workdir / "results") == before and tree(workdir / "logs") == logs


def test_the_cut_runs_are_planned_again_and_a_new_seed_adds_only_its_runs(replayed):
    workdir, config, _, _, _, _ = replayed
    assert plan_config(workdir, config | LONG)["train"] == 4  # each cut run's next attempt
    assert plan_config(workdir, config | LONG | {"seeds": [1, 2, 3]})["train"] == 6


def test_a_second_call_beside_a_running_one_deletes_nothing_of_it(replayed):
    """The first call (epochs 3 again: four runs) holds Snakemake's lock; a second one, started while it runs,
    fails on the lock and writes nothing; the first finishes with every run."""
    workdir, config, _, _, _, _ = replayed
    cfg = workdir / "config" / "again.yaml"
    cfg.write_text(json.dumps(config | {"time_budget_s": 600}))
    first = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", str(cfg)],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    path = workdir / "logs" / "default" / "invocation.json"
    deadline = time.time() + 120
    while time.time() < deadline and invocation.read(path).budget_s != 600:  # the first call's onstart wrote it
        time.sleep(0.2)
    mine = path.read_bytes()
    second = snakemake(workdir, "--cores", "2", "--configfile", str(cfg), check=False)
    out, _ = first.communicate(timeout=300)
    assert second.returncode != 0 and "LockException" in second.stdout + second.stderr
    assert path.read_bytes() == mine
    assert first.returncode == 0, out
    assert [attempts.read(workdir / p)["outcome"] for p in invocation.read(path).attempts] == ["finished"] * 4


def test_a_bundle_of_a_call_whose_budget_cut_every_run_says_so_with_the_fix(replayed):
    """Reliability 6 (5): `snakemake bundle` when the budget cut every run ended in an IndexError naming
    nothing. Planted once: scripts/bundle.py without its check failed here."""
    workdir, _, long_cfg, _, _, _ = replayed
    proc = snakemake(workdir, "bundle", "--cores", "2", "--configfile", str(long_cfg), check=False)
    assert proc.returncode != 0
    assert "no finished run to bundle: the time budget cut all 4 planned runs. Fix: give time_budget_s" in proc.stderr
    assert "IndexError" not in proc.stderr
