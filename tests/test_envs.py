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


def pyproject_extra_pins(extra: str) -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        m.group(1).lower(): m.group(2)
        for m in (re.match(r"^([A-Za-z0-9_.\-\[\]]+)==([^;\s]+)", d) for d in project["optional-dependencies"][extra])
    }


def env_pins(path) -> tuple[dict, dict[str, str]]:
    env = yaml.safe_load(path.read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    return env, {n.lower(): v for n, v in (p.split("==") for p in pip)}


def test_envs_parse_and_agree_with_pyproject():
    pins = pyproject_pins()
    pins["tensorflow[and-cuda]"] = pins["tensorflow"]  # the GPU env: the same distribution with its CUDA wheels
    pins["nvidia-ml-py"] = pyproject_extra_pins("gpu")["nvidia-ml-py"]
    pins |= pyproject_extra_pins("jax")
    pins["jax[cuda12]"] = pins["jax"]  # the JAX GPU env: the same jax with its CUDA 12 plugin
    pins |= pyproject_extra_pins("pytorch")
    envs = sorted((ROOT / "envs").glob("*.yaml"))
    assert {p.name for p in envs} == {
        "workflow.yaml",
        "tensorflow.yaml",
        "tensorflow-gpu.yaml",
        "jax.yaml",
        "jax-gpu.yaml",
        "pytorch.yaml",
        "pytorch-gpu.yaml",
    }
    for path in envs:
        env, pinned = env_pins(path)
        assert "python=3.11" in env["dependencies"], path
        assert pinned, path
        for name, version in pinned.items():
            assert pins.get(name) == version, f"{path.name}: {name}=={version}, pyproject pins {pins.get(name)}"


def test_every_conda_env_named_by_a_rule_exists():
    from mnist_speedup.spec import frameworks

    declared = frameworks.declarations().values()
    named = [("framework " + fw.name, env) for fw in declared for env in fw.environments.values()]
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        named += [(smk.name, rel) for rel in re.findall(r'"(\.\./\.\./envs/[^"]+)"', smk.read_text())]
    for where, rel in named:
        assert (ROOT / "workflow" / "rules" / rel).resolve().is_file(), f"{where}: {rel}"


def test_no_rule_runs_a_shell_command():
    """Config values reach rules only as params of Python scripts, never a
    shell command line, so they cannot inject commands."""
    for smk in [ROOT / "Snakefile", *(ROOT / "workflow" / "rules").glob("*.smk")]:
        text = smk.read_text()
        assert not re.search(r"^\s+(shell|run):", text, re.M), smk.name
