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
