"""Lint-clean rules, snakefmt-formatted workflow, ruff-clean Python."""

import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


def run(*cmd):
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_snakemake_lint_is_clean():
    proc = run(sys.executable, "-m", "snakemake", "--lint")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Lints for" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


@pytest.mark.skipif(shutil.which("snakefmt") is None, reason="snakefmt not installed (pip install -e '.[dev]')")
def test_workflow_is_snakefmt_formatted():
    proc = run("snakefmt", "--check", "Snakefile", "workflow/rules")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed (pip install -e '.[dev]')")
def test_python_passes_ruff():
    proc = run("ruff", "check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run("ruff", "format", "--check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_config_readme_is_generated_from_the_schema():
    """config/README.md documents every key of the schema and is exactly
    what `python -m mnist_speedup.configdoc` writes."""
    import yaml

    from mnist_speedup import configdoc

    schema = yaml.safe_load((ROOT / "config" / "schemas" / "config.schema.yaml").read_text())
    text = (ROOT / "config" / "README.md").read_text()
    assert text == configdoc.render(schema), "regenerate: python -m mnist_speedup.configdoc > config/README.md"
    for key in schema["properties"]:
        assert f"| `{key}` |" in text


def test_catalogue_metadata_names_the_entry_points():
    import yaml

    meta = yaml.safe_load((ROOT / ".snakemake-workflow-catalog.yml").read_text())
    assert meta["usage"]["mandatory-flags"]["flags"]
    assert (ROOT / meta.get("snakefile", "Snakefile")).is_file()
    assert (ROOT / "workflow" / "Snakefile").is_file()
