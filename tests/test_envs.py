"""The rules' conda environments parse and pin what the Python package pins."""

import re
import tomllib

import yaml

from conftest import ROOT


def pyproject_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {}
    for dep in project["dependencies"]:
        name, version = re.match(r"^([A-Za-z0-9_.\-\[\]]+)==([^;\s]+)", dep).groups()
        pins[name.lower()] = version
    return pins


def env_pins(path) -> tuple[dict, dict[str, str]]:
    env = yaml.safe_load(path.read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    return env, {n.lower(): v for n, v in (p.split("==") for p in pip)}


def test_envs_parse_and_agree_with_pyproject():
    pins = pyproject_pins()
    pins["tensorflow"] = pins["tensorflow-cpu"]  # the conda envs take the full build (CPU and GPU)
    envs = sorted((ROOT / "envs").glob("*.yaml"))
    assert {p.name for p in envs} == {"workflow.yaml", "tensorflow.yaml"}
    for path in envs:
        env, pinned = env_pins(path)
        assert "python=3.11" in env["dependencies"], path
        assert pinned, path
        for name, version in pinned.items():
            assert pins.get(name) == version, f"{path.name}: {name}=={version}, pyproject pins {pins.get(name)}"


def test_every_conda_env_named_by_a_rule_exists():
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        for rel in re.findall(r'"(\.\./\.\./envs/[^"]+)"', smk.read_text()):
            assert (smk.parent / rel).resolve().is_file(), f"{smk.name}: {rel}"


def test_no_rule_runs_a_shell_command():
    """Config values reach rules only as params of Python scripts, never a
    shell command line, so they cannot inject commands."""
    for smk in [ROOT / "Snakefile", *(ROOT / "workflow" / "rules").glob("*.smk")]:
        text = smk.read_text()
        assert not re.search(r"^\s+(shell|run):", text, re.M), smk.name
