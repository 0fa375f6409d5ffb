"""extra_runs folders that would merge nothing, or part of what they hold
(issue 31 (1)): each is refused when the config is read, with what was
found, where, and a fix that fits. Planted once: the old check (a runs/
folder exists) let all five through (the first four silently merged nothing)."""

import copy
import json

import pytest

from conftest import ROOT
from crafted import make_record, write_records
from mnist_speedup.config import parse as config_check

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
BASE = {
    "mirrors": ["/data/mnist"],
    "devices": {"cpu": {"type": "cpu", "threads": 2}},
    "baseline": "cpu",
    "seeds": [1, 2],
    "batch_sizes": [100],
    "epochs": 3,
    "warmup_epochs": 1,
}


def refusal(folder) -> str:
    with pytest.raises(config_check.ConfigError) as err:
        config_check.parse(copy.deepcopy(BASE) | {"extra_runs": [str(folder)]}, None, SCHEMA, gpus=[])
    message = str(err.value)
    assert message.startswith("config key `extra_runs`") and "Fix:" in message
    return message


def test_a_folder_in_this_versions_layout_passes(tmp_path):
    write_records(tmp_path / "other", [make_record("cpu", 100, 1)])
    config = config_check.parse(copy.deepcopy(BASE) | {"extra_runs": [str(tmp_path / "other")]}, None, SCHEMA, gpus=[])
    assert config["extra_runs"] == [str(tmp_path / "other")]


def test_records_in_the_layout_before_workloads(tmp_path):
    old = tmp_path / "old" / "runs" / "cpu" / "bs100"
    old.mkdir(parents=True)
    for seed in (1, 2):
        (old / f"seed{seed}.json").write_text(json.dumps({"schema_version": 2}))
    message = refusal(tmp_path / "old")
    assert "2 records in the layout of a version before workloads" in message
    assert "runs/cpu/bs100/seed1.json" in message and "rerun those runs with this version" in message


def test_an_empty_runs_folder(tmp_path):
    (tmp_path / "empty" / "runs").mkdir(parents=True)
    assert "holds no run records (it is empty)" in refusal(tmp_path / "empty")


def test_records_nested_one_level_too_deep(tmp_path):
    write_records(tmp_path / "deep" / "runs" / "copied", [make_record("cpu", 100, 1)])
    message = refusal(tmp_path / "deep")
    assert "one level too deep" in message and "runs/copied/runs/mlp/cpu/bs100/seed1.json" in message
    assert "under an extra folder 'copied'" in message


def test_a_whole_results_folder_copied_in(tmp_path):
    write_records(tmp_path / "theirs" / "default", [make_record("cpu", 100, 1)])
    message = refusal(tmp_path / "theirs")
    assert f"{tmp_path / 'theirs' / 'default' / 'runs'} is one" in message
    assert f"Fix: point extra_runs at {tmp_path / 'theirs' / 'default'}" in message
    assert "copy another machine's results/ folder" not in message  # the old fix told them to do what they did


def test_this_experiments_own_results_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_records(tmp_path / "results" / "default", [make_record("cpu", 100, 1)])
    message = refusal("results/default")
    assert "is this experiment's own results folder (results/default)" in message
    assert "remove it from extra_runs" in message
