"""Lint-clean rules, snakefmt-formatted workflow, ruff-clean Python."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT


def run(*cmd):
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def tool(name: str) -> str:
    """The dev tool from PATH or from this interpreter's own environment;
    missing, it skips the test on a developer's machine and fails in CI."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail(f"{name} is not installed, so this check cannot run in CI (pip install -e '.[dev]')")
    pytest.skip(f"{name} not installed (pip install -e '.[dev]')")


def test_snakemake_lint_is_clean():
    proc = run(sys.executable, "-m", "snakemake", "--lint")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Lints for" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_workflow_is_snakefmt_formatted():
    proc = run(tool("snakefmt"), "--check", "Snakefile", "workflow/rules")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_python_passes_ruff():
    ruff = tool("ruff")
    proc = run(ruff, "check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run(ruff, "format", "--check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_config_readme_is_generated_from_the_schema():
    """config/README.md documents every key of the schema and is exactly
    what `python -m mnist_speedup.config.doc` writes."""
    import yaml

    from mnist_speedup.config import doc as configdoc

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    text = (ROOT / "config" / "README.md").read_text()
    assert text == configdoc.render(schema), "regenerate: python -m mnist_speedup.config.doc > config/README.md"
    for key in schema["properties"]:
        assert f"| `{key}` |" in text


def test_catalogue_metadata_names_the_entry_points():
    import yaml

    meta = yaml.safe_load((ROOT / ".snakemake-workflow-catalog.yml").read_text())
    assert meta["usage"]["mandatory-flags"]["flags"]
    assert (ROOT / meta.get("snakefile", "Snakefile")).is_file()
    assert (ROOT / "workflow" / "Snakefile").is_file()


def test_every_python_dash_m_named_in_the_docs_exists():
    """A doc that tells the user to run `python -m X` names a module that exists (issue 37: the docs named
    mnist_speedup.configdoc long after it had moved). Planted once: that old name back in config/README.md failed."""
    import importlib.util
    import re

    docs = [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        *(ROOT / "docs").glob("*.md"),
        ROOT / "config" / "README.md",
        ROOT / "benchmarks" / "RESULTS.md",
        *(ROOT / "workflow" / "mnist_speedup").rglob("*.py"),
    ]
    named = {(path.name, m) for path in docs for m in re.findall(r"python3? -m ([A-Za-z_][\w.]*)", path.read_text())}
    assert named, "no `python -m` found: the pattern is wrong"
    for where, module in sorted(named):
        assert importlib.util.find_spec(module) is not None, f"{where} names `python -m {module}`, which does not exist"


def test_an_in_process_plan_refuses_a_copy_whose_code_was_edited(tmp_path):
    """conftest.plan_here plans with this process's package: an edit of the copy's package would go unseen,
    so it refuses. Planted once: without the check, the plan ran and this failed."""
    from conftest import copy_workflow, plan_here

    workdir = copy_workflow(tmp_path / "wf")
    target = workdir / "workflow" / "mnist_speedup" / "words.py"
    target.write_text(target.read_text() + "\n# an edit\n")
    with pytest.raises(AssertionError, match="words.py"):
        plan_here(workdir, workdir / "config" / "config.yaml")


def test_the_scheduling_order_names_test_files_that_exist():
    """tests/scheduling.py deals the longest files out first: a renamed file would silently lose its place."""
    import scheduling

    assert [n for n in scheduling.LONGEST_FIRST if not (ROOT / "tests" / n).is_file()] == []


#: the analysis modules that compute a statistic (an interval, a mean, a test, a regression, a verdict)
STATISTICS = {
    "aggregate",
    "bootstrap",
    "compare",
    "drift",
    "frameworks",
    "parity",
    "replication",
    "scaling",
    "stats",
    "summary",
    "tables",
    "tta",
    "twins",
}


def _imported_analysis_modules(path) -> set[str]:
    """The ``mnist_speedup.analysis`` modules a file imports, at any place in it."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "mnist_speedup.analysis":
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mnist_speedup.analysis."):
            found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[2] for a in node.names if a.name.startswith("mnist_speedup.analysis.")}
    return found


def test_the_report_and_the_figures_compute_no_statistic():
    """House 4 (4): every number the report, the figures and the HTML page show comes from a table the
    aggregate rule writes; report/ renders (it may read the checks' thresholds and where runs stand,
    analysis/checks.py and analysis/placing.py, which compute no interval; the report rule's script words
    replication's stop from its round's measurement). Planted once: the framework
    pairs computed again in report/sections/frameworks.py failed here."""
    files = [
        *(ROOT / "workflow" / "mnist_speedup" / "report").rglob("*.py"),
        ROOT / "workflow" / "scripts" / "figure.py",
    ]
    offending = {str(p.relative_to(ROOT)): sorted(_imported_analysis_modules(p) & STATISTICS) for p in files}
    assert {k: v for k, v in offending.items() if v} == {}


def test_every_enum_of_the_schema_is_its_registry_s_list():
    """House 4 (5): a closed list in the schema is the registry's own, in the registry's order, or filled in
    from it (the frameworks: spec/schema.py): a workload type or a precision added to its registry and not to
    the schema (or the other way round) fails here. Planted once: `tf32` left out of the schema's precision
    enum failed here."""
    import yaml

    from mnist_speedup.data import mnist
    from mnist_speedup.spec import frameworks, precisions, schema, workloads

    raw = yaml.safe_load(schema.PATH.read_text(encoding="utf-8"))
    device = next(s for s in raw["properties"]["devices"]["oneOf"] if s.get("type") == "object")
    fields = device["additionalProperties"]["properties"]
    assert fields["precision"]["enum"] == list(precisions.PRECISIONS)
    assert "enum" not in fields["framework"]  # filled in from the framework folders, never written here
    loaded = next(s for s in schema.load()["properties"]["devices"]["oneOf"] if s.get("type") == "object")
    assert loaded["additionalProperties"]["properties"]["framework"]["enum"] == frameworks.names()
    workload = raw["properties"]["workloads"]["additionalProperties"]["properties"]["type"]
    assert "enum" not in workload  # filled in from the workload files, never written here
    filled = workloads.with_types(yaml.safe_load(schema.PATH.read_text(encoding="utf-8")))
    loaded = filled["properties"]["workloads"]["additionalProperties"]["properties"]["type"]
    assert loaded["enum"] == sorted(workloads.types())
    assert raw["properties"]["mnist_sha256"]["propertyNames"]["enum"] == list(mnist.FILES)


#: files over the limit, each with why it stays whole
LONG_FILES = {
    "tests/test_workflow.py": "its tests share one module-scoped end-to-end run; split, xdist would run it "
    "once per worker (about 90 s more in CI)"
}


def test_the_formatter_formats_and_functions_and_files_stay_small():
    """House 4 (7): at most 20 `# fmt: skip` in workflow/ and tests/ together (there were 322), every function
    of the workflow at most 60 lines, every file under 400 lines. Planted once each: a 61-line function and a
    21st `# fmt: skip` failed here."""
    import ast

    files = [*(ROOT / "workflow").rglob("*.py"), *(ROOT / "workflow").rglob("*.smk"), *(ROOT / "tests").rglob("*.py")]
    texts = {
        p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in files if "__pycache__" not in p.parts
    }
    skips = sum(text.count("# fmt: skip") for text in texts.values())
    assert skips <= 20, f"{skips} `# fmt: skip` lines: let ruff format them"
    long_files = {name: len(text.splitlines()) for name, text in texts.items() if len(text.splitlines()) >= 400}
    assert set(long_files) <= set(LONG_FILES), f"files of 400 lines or more: {long_files}"
    long_functions = [
        f"{name}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for name, text in texts.items()
        if name.startswith("workflow/") and name.endswith(".py")
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 60
    ]
    assert long_functions == []
