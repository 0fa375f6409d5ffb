"""This workflow used as a Snakemake module by another workflow, whose
working directory is elsewhere: every path resolves from the module."""

import pytest
import yaml

from conftest import copy_workflow, planned_jobs, snakemake, synthetic_mnist, tiny_config, write_mirror

pytestmark = pytest.mark.slow

OUTER = """configfile: "config/config.yaml"


module speedup:
    snakefile:
        "{repo}/{snakefile}"
    config:
        config


use rule * from speedup as speedup_*


rule all:
    default_target: True
    input:
        rules.speedup_all.input,
"""


def test_an_outer_workflow_runs_this_one_as_a_module(tmp_path):
    """Through workflow/Snakefile, as snakedeploy sets a module up (house 4 (6)); the top-level Snakefile,
    which only includes it, is planned the same way (a dry run: the same jobs)."""
    sums = write_mirror(tmp_path / "mirror", synthetic_mnist())
    repo = copy_workflow(tmp_path / "speedup-repo")
    outer = tmp_path / "outer"
    (outer / "config").mkdir(parents=True)
    # TensorFlow: the synthetic end-to-end run of the article's framework (the others run JAX, for time)
    one_device = {"cpu": {"type": "cpu", "threads": 2, "framework": "tensorflow"}}
    config = tiny_config(tmp_path / "mirror", sums, seeds=[1], devices=one_device, experiment="viamodule")
    (outer / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    (outer / "Snakefile").write_text(OUTER.format(repo=repo, snakefile="Snakefile"))
    top_level = planned_jobs(snakemake(outer, "--cores", "2", "-n"))
    (outer / "Snakefile").write_text(OUTER.format(repo=repo, snakefile="workflow/Snakefile"))
    assert planned_jobs(snakemake(outer, "--cores", "2", "-n")) == top_level and top_level["speedup_train"] == 1
    proc = snakemake(outer, "--cores", "2", "--resources", "timing_slot=1")
    results = outer / "results" / "viamodule"
    for name in ("report.md", "summary.csv", "speedup.csv", "figures/speedup.png", "runs/mlp/cpu/bs100/seed1.json"):
        assert (results / name).is_file(), proc.stdout + proc.stderr
    assert not (repo / "results").exists() and not (repo / "resources").exists()
    assert "speedup_train" in proc.stdout + proc.stderr
