"""A workflow whose devices all use one framework runs every rule where the other frameworks cannot be imported."""

import json

import pytest

from conftest import planned_jobs, snakemake, synthetic_workdir, write_config
from mnist_speedup.records import fields
from mnist_speedup.spec import frameworks

pytestmark = pytest.mark.slow


def _devices(framework: str) -> dict:
    return {"cpu": {"type": "cpu", "threads": 2, "framework": framework},
            "cpu1": {"type": "cpu", "threads": 1, "framework": framework}}  # fmt: skip


@pytest.fixture(scope="module", params=["jax", "pytorch"])
def alone(tmp_path_factory, request):
    """The whole workflow and its bundle with one framework, with stand-ins for every other
    framework's modules earlier on the path that raise on import."""
    name = request.param
    root = tmp_path_factory.mktemp(f"only-{name}")
    blocked = root / "blocked"
    others = [m for fw in frameworks.declarations().values() if fw.name != name for m in fw.modules]
    for module in others:
        (blocked / module).mkdir(parents=True)
        (blocked / module / "__init__.py").write_text(f"raise ImportError('{module} is blocked in this test')\n")
    workdir, cfg, config = synthetic_workdir(root, devices=_devices(name), seeds=[1, 2], epochs=2)
    env = {"PYTHONPATH": str(blocked)}
    snakemake(workdir, "--cores", "2", "--configfile", str(cfg), env=env)
    snakemake(workdir, "bundle", "--cores", "1", "--configfile", str(cfg), env=env)
    return name, workdir, cfg, config, env, others


def test_every_rule_ran_and_no_job_imported_another_framework(alone):
    name, workdir, _, _, env, others = alone
    results = workdir / "results" / "default"
    assert (results / "report.md").is_file() and list(results.glob("bundle-*.tar.gz"))
    record = json.loads((results / "runs" / "mlp" / "cpu" / "bs100" / "seed1.json").read_text())
    assert record["environment"]["framework"] == name and record["environment"]["tensorflow"] is None
    declared = frameworks.declarations()[name]
    assert all(record["environment"][field] for field in declared.software)  # its own versions are recorded
    for path in (results / "runs").rglob("seed*.json"):  # the field table is complete for what these runs assemble
        assert fields.undeclared(json.loads(path.read_text())) == [], path
    report = (results / "report.md").read_text()
    assert f"Models ({declared.words})" in report or f"Model ({declared.words})" in report
    # the stand-ins really block: a job that imported another framework would have failed
    logs = "".join(p.read_text() for p in (workdir / "logs").rglob("*.log"))
    assert not any(f"{module} is blocked" in logs for module in others)


def test_writing_jaxs_own_compiler_setting_out_plans_nothing(alone):
    name, workdir, _, config, env, _ = alone
    if name != "jax":
        pytest.skip("JAX's own setting")
    written = {k: {**v, "jit_compile": True} for k, v in _devices("jax").items()}
    cfg = write_config(workdir, {**config, "devices": written}, "written.yaml")
    assert planned_jobs(snakemake(workdir, "-n", "--cores", "2", "--configfile", str(cfg), env=env)) == {}
