"""A workflow whose devices all use JAX runs every rule where `import tensorflow` fails."""

import json

import pytest

from conftest import planned_jobs, snakemake, synthetic_workdir, write_config
from mnist_speedup.records import fields

pytestmark = pytest.mark.slow

JAX_DEVICES = {"cpu": {"type": "cpu", "threads": 2, "framework": "jax"},
               "cpu1": {"type": "cpu", "threads": 1, "framework": "jax"}}  # fmt: skip


@pytest.fixture(scope="module")
def without_tensorflow(tmp_path_factory):
    """The whole workflow and its bundle, with stand-ins for tensorflow and
    tensorlayer earlier on the path that raise on import."""
    root = tmp_path_factory.mktemp("notf")
    blocked = root / "blocked"
    for name in ("tensorflow", "tensorlayer"):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(f"raise ImportError('{name} is blocked in this test')\n")
    workdir, cfg, config = synthetic_workdir(root, devices=JAX_DEVICES, seeds=[1, 2], epochs=2)
    env = {"PYTHONPATH": str(blocked)}
    snakemake(workdir, "--cores", "2", "--configfile", str(cfg), env=env)
    snakemake(workdir, "bundle", "--cores", "1", "--configfile", str(cfg), env=env)
    return workdir, cfg, config, env


def test_every_rule_ran_and_no_job_imported_tensorflow(without_tensorflow):
    workdir, _, _, env = without_tensorflow
    results = workdir / "results" / "default"
    assert (results / "report.md").is_file() and list(results.glob("bundle-*.tar.gz"))
    record = json.loads((results / "runs" / "mlp" / "cpu" / "bs100" / "seed1.json").read_text())
    assert record["environment"]["framework"] == "jax" and record["environment"]["tensorflow"] is None
    for path in (results / "runs").rglob("seed*.json"):  # the field table is complete for what JAX runs assemble
        assert fields.undeclared(json.loads(path.read_text())) == [], path
    assert "Models (JAX)" in (results / "report.md").read_text() or "Model (JAX)" in (results / "report.md").read_text()
    # the stand-in really blocks: a job that imported TensorFlow would have failed
    logs = "".join(p.read_text() for p in (workdir / "logs").rglob("*.log"))
    assert "tensorflow is blocked" not in logs


def test_writing_jaxs_own_compiler_setting_out_plans_nothing(without_tensorflow):
    workdir, _, config, env = without_tensorflow
    written = {k: {**v, "jit_compile": True} for k, v in JAX_DEVICES.items()}
    cfg = write_config(workdir, {**config, "devices": written}, "written.yaml")
    assert planned_jobs(snakemake(workdir, "-n", "--cores", "2", "--configfile", str(cfg), env=env)) == {}
