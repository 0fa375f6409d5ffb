"""Bad configuration stops the workflow at parse time with one clear message."""

import copy
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, copy_workflow, planned_jobs, snakemake, tiny_config, write_config
from mnist_speedup.config import parse as config_check

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"

BASE = {
    "mirrors": ["/data/mnist"],
    "mnist_sha256": {},
    "validation_size": 10000,
    "train_samples": None,
    "devices": {"cpu": {"type": "cpu", "threads": 2}, "cpu1": {"type": "cpu", "threads": 1}},
    "baseline": "cpu",
    "seeds": [1, 2],
    "batch_sizes": [100, 500],
    "epochs": 3,
    "warmup_epochs": 1,
    "extra_runs": [],
}


def parsed(config: dict) -> dict:
    """The whole check the workflow makes of a config: schema, then what spans keys."""
    return config_check.parse(copy.deepcopy(config), None, SCHEMA, gpus=[])


def with_(**changes):
    config = copy.deepcopy(BASE)
    config.update(changes)
    return config


@pytest.mark.parametrize(
    "config, key, fragment",
    [
        (with_(batch_sizes=[0]), "batch_sizes[0]", "0 is not a positive batch size"),
        (with_(batch_sizes=[-5]), "batch_sizes[0]", "-5 is not a positive batch size"),
        (with_(epochs=0), "epochs", "0 is not positive"),
        (with_(warmup_epochs=3), "warmup_epochs", "leaves no steady-state epoch"),
        (with_(batch_sizes=[60000]), "batch_sizes", "larger than the training set (50000"),
        (with_(train_samples=1000, batch_sizes=[2000]), "batch_sizes", "(1000 samples per epoch)"),
        (with_(seeds=[1, 1]), "seeds", "1 is listed twice"),
        (with_(batch_sizes=[100, 100]), "batch_sizes", "100 is listed twice"),
        (with_(seeds=[]), "seeds", "non-empty list"),
        (with_(seeds=[1.5]), "seeds[0]", "1.5 is not an integer"),
        (with_(devices={"cpu": {"type": "tpu"}}), "devices.cpu.type", "unknown device type 'tpu'"),
        (with_(devices={"cpu": {"type": "cpu", "threads": 0}}), "devices.cpu.threads", "0 is not a positive"),
        (with_(devices={"cpu": {"type": "gpu", "index": -1}}), "devices.cpu.index", "-1 is not a GPU index"),
        (with_(devices={"../../etc": {"type": "cpu", "threads": 1}}), "devices", "not safe in a file path"),
        (with_(devices={"a;rm -rf ~": {"type": "cpu", "threads": 1}}), "devices", "not safe in a file path"),
        (with_(baseline="gpu"), "baseline", "'gpu' is not one of the devices ['cpu', 'cpu1']"),
        (with_(mirrors=["ftp://example.org/mnist"]), "mirrors", "unsupported scheme 'ftp'"),
        (with_(extra_runs=["/no/such/folder"]), "extra_runs", "is not a readable directory"),
        (with_(mnist_sha256={"train-images": "0" * 64}), "mnist_sha256", "unknown file names"),
        (with_(input_pipeline="host", steps_per_call="epoch"), "steps_per_call", "with input_pipeline: host"),
        (with_(input_pipeline="host", steps_per_call=7), "steps_per_call", "with input_pipeline: host"),
        (with_(steps_per_call=0), "steps_per_call", "0 is not a positive whole number"),
        (with_(target_accuracy=1.5), "target_accuracy", "1.5 is not a validation accuracy in (0, 1]"),
        (with_(target_accuracy=0), "target_accuracy", "0 is not a validation accuracy"),
        # issue 13: values that used to pass and fail late
        (with_(devices={"cpu": {"type": "cpu", "threads": 100_000}}), "devices.cpu.threads", "logical cores"),
        (with_(devices={"cpu": {"type": "cpu", "threads": 1.5}}), "devices.cpu.threads", "1.5 must be a whole number"),
        (with_(seeds=[1099511627776]), "seeds[0]", "1099511627776 is outside 0 to 2**32 - 1"),
        (with_(figure={"palette": "notapalette"}), "figure.palette", "'notapalette' is not a palette seaborn knows"),
        (with_(validation_size=60000), "validation_size", "60000 leaves no training data"),
        (
            with_(devices={"cpu": {"type": "cpu", "threads": 1, "price_per_hour": 0}}),
            "devices.cpu.price_per_hour",
            "0 is not a positive price",
        ),
        (
            with_(devices={"cpu": {"type": "cpu", "threads": 1, "price_per_hour": -2.5}}),
            "devices.cpu.price_per_hour",
            "-2.5 is not a positive price",
        ),
    ],
)
def test_each_problem_is_named_with_its_key_and_fix(config, key, fragment):
    with pytest.raises(config_check.ConfigError) as err:
        parsed(config)
    message = str(err.value)
    assert f"config key `{key}`" in message
    assert fragment in message
    assert "Fix:" in message


UNREADABLE = """
import sys
sys.path.insert(0, {workflow!r})
from mnist_speedup.config import parse as config
try:
    config.check({config!r}, gpus=[])
except config.ConfigError as exc:
    print("REFUSED", exc)
"""


def test_unreadable_extra_runs(tmp_path):
    """As an unprivileged user: root reads every folder, so as root (CI runs
    as root) the check runs under `setpriv` as user nobody."""
    import subprocess
    import sys
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="unreadable-", dir="/tmp"))
    shared.chmod(0o755)
    folder = shared / "other"
    (folder / "runs").mkdir(parents=True)
    folder.chmod(0)
    config = parsed(with_()) | {"extra_runs": [str(folder)]}
    script = UNREADABLE.format(workflow=str(ROOT / "workflow"), config=config)
    cmd = [sys.executable, "-c", script]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: permissions are not enforced")
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=shared)
    finally:
        folder.chmod(0o755)
        shutil.rmtree(shared)
    assert "REFUSED" in proc.stdout and "not a readable directory" in proc.stdout, proc.stdout + proc.stderr


def test_extra_runs_without_runs_folder(tmp_path):
    with pytest.raises(config_check.ConfigError, match="holds no runs/ folder"):
        parsed(with_(extra_runs=[str(tmp_path)]))


def test_valid_config_passes_and_auto_resolves():
    config = parsed(with_(devices="auto"))
    assert set(config["devices"]) == {"cpu", "cpu1"} and config["_auto_devices"]


@pytest.mark.parametrize(
    "override, fragments",
    [
        ({"epochs": "four"}, ["'four' is not of type 'integer'", "epochs"]),
        ({"seeds": []}, ["seeds", "should be non-empty"]),
        ({"batch_sizes": [0]}, ["config key `batch_sizes[0]`", "0 is not a positive batch size"]),
        ({"warmup_epochs": 2}, ["config key `warmup_epochs`"]),
        ({"baseline": "tpu"}, ["config key `baseline`"]),
        ({"mirrors": ["gopher://x"]}, ["config key `mirrors`", "gopher"]),
        ({"unknown_key": 1}, ["unknown_key", "Additional properties"]),
    ],
)
def test_snakemake_stops_at_parse_time_and_touches_nothing(tmp_path, override, fragments):
    workdir = copy_workflow(tmp_path / "wf")
    (workdir / "results").mkdir()
    kept = workdir / "results" / "kept.txt"
    kept.write_text("earlier result")
    cfg = write_config(workdir, tiny_config(tmp_path, {}, **override))
    proc = snakemake(workdir, "--cores", "2", "--configfile", str(cfg), check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    for fragment in fragments:
        assert fragment in out, out
    assert "Select jobs to execute" not in out  # no job ever started
    assert sorted(p.name for p in (workdir / "results").iterdir()) == ["kept.txt"]
    assert kept.read_text() == "earlier result"
    assert not (workdir / "resources").exists()


def prepared(file_config: dict, command_line: dict) -> dict:
    """What the workflow does with a config file and --config values."""
    config = copy.deepcopy(file_config)
    config.update(copy.deepcopy(command_line))  # Snakemake's own merge (deep for mappings)
    return config_check.prepare(config, command_line, SCHEMA)


@pytest.mark.parametrize(
    "command_line, expected",
    [
        (
            {"seeds": ["1", "2", "3"], "batch_sizes": ["100", "500"], "epochs": 5},
            {"seeds": [1, 2, 3], "batch_sizes": [100, 500], "epochs": 5},
        ),
        ({"deterministic": "true"}, {"deterministic": True}),
        ({"train_samples": "null"}, {"train_samples": None}),
        ({"figure": {"dpi": "100"}}, {"figure": {"dpi": 100}}),
        ({"target_accuracy": "0.9"}, {"target_accuracy": 0.9}),
        ({"steps_per_call": "epoch"}, {"steps_per_call": "epoch"}),
        ({"steps_per_call": "4"}, {"steps_per_call": 4}),
    ],
)
def test_command_line_values_become_the_schemas_types(command_line, expected):
    config = prepared(BASE, command_line)
    for key, value in expected.items():
        assert config[key] == value


def test_command_line_devices_replace_the_files_devices():
    config = prepared(BASE, {"devices": {"solo": {"type": "cpu", "threads": "1"}}, "baseline": "solo"})
    assert config["devices"] == {"solo": {"type": "cpu", "threads": 1}}


@pytest.mark.parametrize(
    "command_line, fragment",
    [
        ({"seeds": ["1", "x"]}, "config key `seeds[1]`: 'x' is not of type 'integer'"),
        (
            {"devices": {"cpu": {"type": "cpu", "threads": "1.5"}}},
            "config key `devices.cpu.threads`: 1.5 must be a whole number",
        ),
        ({"devices": {1060: {"type": "cpu", "threads": 1}}}, "quote it: '1060'"),
        ({"devices": {"Cpu": {"type": "cpu"}, "cpu": {"type": "cpu"}}}, "differ only in case"),
        ({"figure": {"dpi": "30000"}}, "config key `figure.dpi`: 30000 is greater than the maximum of 1200"),
        ({"figure": {"formats": ["png", "png"]}}, "config key `figure.formats`"),
    ],
)
def test_command_line_mistakes_get_the_projects_message(command_line, fragment):
    with pytest.raises(config_check.ConfigError) as err:
        prepared(BASE, command_line)
    assert fragment in str(err.value) and "Fix:" in str(err.value)


def test_list_overrides_work_on_the_real_command_line(tmp_path, mirror):
    workdir = copy_workflow(tmp_path / "wf")
    cfg = write_config(workdir, tiny_config(*mirror))
    proc = snakemake(
        workdir,
        "-n",
        "--cores",
        "2",
        "--configfile",
        str(cfg),
        "--config",
        "seeds=[1,2,3]",
        "batch_sizes=[100,200]",
        "epochs=3",
    )
    assert planned_jobs(proc)["train"] == 2 * 3 * 2
    bad = snakemake(workdir, "-n", "--cores", "2", "--configfile", str(cfg), "--config", "seeds=[1,two]", check=False)
    out = bad.stdout + bad.stderr
    assert bad.returncode != 0 and "config key `seeds[1]`" in out and "Traceback" not in out


def test_devices_auto_is_refused_with_a_cluster_executor():
    """Issue 28 (4): detection runs where the Snakefile is parsed (a login
    node). Planted once: without the check a Slurm run planned CPU-only."""
    config = parsed(with_(devices="auto"))
    with pytest.raises(
        config_check.ConfigError,
        match=r"config key `devices`: `auto` is detected where the "
        r"Snakefile is parsed.*Fix: name the devices",
    ):
        config_check.check_executor(config, local=False)
    config_check.check_executor(config, local=True)
    config_check.check_executor(parsed(with_()), local=False)  # named devices: fine on a cluster


@pytest.mark.slow
def test_a_slurm_run_with_devices_auto_stops_before_any_job(tmp_path):
    """Through the real command line: the executor is known only after the
    plan (an onstart hook), and nothing is run or written."""
    pytest.importorskip("snakemake_executor_plugin_slurm")
    workdir = copy_workflow(tmp_path / "wf")
    proc = snakemake(workdir, "--executor", "slurm", "--jobs", "1", check=False, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "`auto` is detected where the Snakefile is parsed" in out
    assert not (workdir / "results").exists() and "submitted" not in out


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "config").glob("*.yaml") if p.name != "config.yaml"))
def test_every_shipped_config_parses_over_the_default(name):
    """config/quick.yaml, three-frameworks.yaml and the others are read as `--configfile` reads them: over
    config/config.yaml. Planted once: a misspelt key in quick.yaml failed here."""
    import yaml

    config = {
        **yaml.safe_load((ROOT / "config" / "config.yaml").read_text()),
        **yaml.safe_load((ROOT / "config" / name).read_text()),
    }
    parsed = config_check.parse(
        config, None, SCHEMA, gpus=[{"index": 0, "uuid": "GPU-x", "name": "H100", "compute_capability": (9, 0)}]
    )
    assert parsed["experiment"] != "default" or name == "config.yaml"


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "config").glob("*.yaml")))
def test_the_one_check_fills_the_defaults_snakemake_s_validate_would(name):
    """House 4 (6): the schema is checked once (config/parse.py), and its defaults are filled by our own
    walk instead of a second validation by Snakemake's `validate`: the same config results from every kept
    config file (over config.yaml, as the workflow reads them). Planted once: the walk without its recursion
    (no `adam.beta_1`) failed here."""
    import yaml
    from snakemake.utils import validate

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config.update(yaml.safe_load((ROOT / "config" / name).read_text()) or {})
    ours = config_check.prepare(copy.deepcopy(config), None, SCHEMA, defaults=True)
    theirs = config_check.prepare(copy.deepcopy(config), None, SCHEMA)
    validate(theirs, str(SCHEMA))
    assert ours == theirs


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"target_accuracy": float("nan")}, "target_accuracy"),
        ({"adam": {"beta_1": float("nan")}}, "adam.beta_1"),
        (
            {"devices": {"cpu": {"type": "cpu", "threads": 2, "price_per_hour": float("inf")}}},
            "devices.cpu.price_per_hour",
        ),
        ({"parity_margin": float("-inf")}, "parity_margin"),
    ],
)
def test_nan_and_infinities_from_a_file_are_refused_naming_the_key(changes, key):
    """Reliability round 6 (2): NaN passed the schema's bounds for every number key; a YAML file's `.nan`
    and `.inf`, at any depth, are refused now. Planted once: the check left out failed every case here."""
    with pytest.raises(config_check.ConfigError, match=rf"config key `{re.escape(key)}`: .* is not a finite number"):
        parsed(with_(**changes))


@pytest.mark.parametrize(
    "argument, key",
    [
        ("learning_rate=nan", "learning_rate"),
        ("time_budget_s=inf", "time_budget_s"),
        ("adam={beta_1: .nan}", "adam.beta_1"),
    ],
)
def test_nan_and_infinities_on_the_command_line_are_refused_naming_the_key(argument, key):
    """As Snakemake's own `--config` parser gives them (`learning_rate=nan` trained, then said "lower
    learning_rate"; nested, the same key was refused as not a number: both are refused alike now)."""
    from snakemake.cli import parse_config

    command_line = parse_config([argument])
    with pytest.raises(config_check.ConfigError, match=rf"config key `{re.escape(key)}`: .* is not a finite number"):
        config_check.parse(with_(**command_line), command_line, SCHEMA, gpus=[])


def test_trusted_keys_must_name_a_file_and_then_folders_are_refused_unless_allowed(tmp_path):
    """Reliability round 6 (1): a trusted_keys path that does not exist passed the config check and failed
    later with a fix that made no sense; with trusted_keys set, an unsigned folder in extra_runs was merged
    silently. Planted once: the folder check left out failed here."""
    from crafted import make_record, write_records

    with pytest.raises(config_check.ConfigError, match=r"config key `trusted_keys`: .*not a readable file"):
        parsed(with_(trusted_keys=str(tmp_path / "missing")))
    allowed = tmp_path / "allowed_signers"
    allowed.write_text("lab@example.org ssh-ed25519 AAAA\n")
    folder = tmp_path / "other"
    write_records(folder, [make_record()])
    with pytest.raises(
        config_check.ConfigError,
        match=r"config key `extra_runs`: .* is a folder, and with "
        r"trusted_keys only signed bundles are merged. Fix: bundle it on its machine",
    ):
        parsed(with_(trusted_keys=str(allowed), extra_runs=[str(folder)]))
    opted = parsed(with_(trusted_keys=str(allowed), extra_runs=[str(folder)], allow_unsigned_folders=True))
    assert opted["allow_unsigned_folders"] is True
    from mnist_speedup.analysis import checks

    assert "Merged unsigned although trusted_keys is set" in checks.unsigned([str(folder)])[0]
    assert checks.unsigned([]) == []
