"""Rerun digests: a stage's digest covers exactly the modules its rule script
imports, directly or through other modules, and nothing else."""

from conftest import ROOT
from mnist_speedup import codedigest

PACKAGE = codedigest.ROOT  # the package as imported (mutation.sh lays it out elsewhere)

SCRIPTS = ROOT / "workflow" / "scripts"

#: what the training process runs, by hand from reading the imports of
#: scripts/train.py and of each module it reaches
TRAINING = {
    "__init__.py",
    "atomic.py",
    "rulescript.py",
    "spec/__init__.py",
    "spec/devices.py",
    "spec/frameworks.py",
    "spec/gpus.py",
    "spec/platforms.py",
    "spec/precisions.py",
    "spec/run.py",
    "spec/schema.py",
    "spec/workloads.py",
    "data/__init__.py",
    "data/mnist.py",
    "data/urls.py",
    "measure/__init__.py",
    "measure/calibrate.py",
    "measure/energy.py",
    "measure/environment.py",
    "measure/cudalibs.py",
    "measure/hostlock.py",
    "measure/interference.py",
    "measure/measurements.py",
    "measure/budget.py",
    "measure/progress.py",
    "measure/record.py",
    "measure/trainer.py",
    "measure/frameworks/__init__.py",
    "measure/frameworks/base.py",
    "measure/frameworks/jax/__init__.py",
    "measure/frameworks/jax/backend.py",
    "measure/frameworks/jax/networks.py",
    "measure/frameworks/jax/training.py",
    "measure/frameworks/tensorflow/__init__.py",
    "measure/frameworks/tensorflow/backend.py",
    "measure/frameworks/tensorflow/networks.py",
    "measure/frameworks/tensorflow/numerics.py",
    "measure/frameworks/tensorflow/training.py",
    "measure/frameworks/pytorch/__init__.py",
    "measure/frameworks/pytorch/backend.py",
    "measure/frameworks/pytorch/networks.py",
    "measure/frameworks/pytorch/numerics.py",
    "measure/frameworks/pytorch/training.py",
    # the plug-ins the networks and the workloads read by folder (their PLUGINS globs)
    "plugins.py",
    "workloads/__init__.py",
    "measure/frameworks/jax/layer_kind.py",
    "measure/frameworks/jax/layers/__init__.py",
    "measure/frameworks/pytorch/layers/__init__.py",
    "measure/frameworks/pytorch/capture.py",
    "measure/frameworks/tensorflow/layers/__init__.py",
    "measure/invocation.py",
    "records/__init__.py",
    "records/attempts.py",
    "records/jsontext.py",
    "records/derived.py",
    "records/seal.py",
}
#: and every workload type's file and every framework's layer file, found here by folder as the workflow finds them
TRAINING |= {
    p.relative_to(PACKAGE).as_posix()
    for p in [*(PACKAGE / "workloads").glob("*.py"), *(PACKAGE / "measure" / "frameworks").glob("*/layers/*.py")]
}
#: the analysis and presentation, which no training may depend on
ANALYSIS = (
    "analysis/stats.py",
    "analysis/compare.py",
    "analysis/tta.py",
    "analysis/parity.py",
    "analysis/scaling.py",
    "analysis/drift.py",
    "analysis/checks.py",
    "analysis/aggregate.py",
    "analysis/summary.py",
    "analysis/replication.py",
    "report/figure.py",
    "report/markdown.py",
)
#: the drawing and the Markdown report, which the tables do not depend on
PRESENTATION = ("report/figure.py", "report/drawings.py", "report/markdown.py", "report/sections/speedup.py")


def _names(script):
    return {p.relative_to(codedigest.ROOT).as_posix() for p in codedigest.modules(SCRIPTS / script)}


def test_the_training_digest_covers_exactly_what_training_imports():
    """Against the list above, transitive imports included (frameworks/ is
    reached only through trainer.py and calibrate.py; each stage's __init__.py
    is imported with its package). Planted once: a
    digest of direct imports only missed frameworks/ and failed."""
    assert _names("train.py") == TRAINING


def test_editing_an_analysis_module_reruns_no_training():
    """Issue 31 (6): run.summary_row imported stats inside a function, so a
    comment in stats.py reran every training run. The row now lives in
    summary.py. Planted once: `from . import stats` back in run.py failed."""
    training = _names("train.py")
    assert not training & set(ANALYSIS)
    assert {"analysis/stats.py", "analysis/summary.py"} <= _names("aggregate.py")


def test_editing_the_figure_or_report_code_reruns_no_aggregation():
    """The aggregation script reads the registry of outputs only. In CI a
    comment in report/figure.py reran aggregation: the registry imported the
    figure module (inside its drawing functions) and report/__init__.py
    imported every section. Planted once: `from mnist_speedup.report import
    figure` back in outputs.py failed here."""
    assert not _names("aggregate.py") & set(PRESENTATION)
    assert "report/outputs.py" in _names("aggregate.py")


def test_an_import_in_any_block_is_found_and_an_edited_file_is_read_again(tmp_path):
    """The import reader walks statements only (expressions hold no import) and keeps one parse per file
    version. Planted once each: a walker without `handlers` missed the first import; a cache keyed by the
    path alone missed the edit."""
    module = tmp_path / "m.py"
    module.write_text("try:\n    pass\nexcept ImportError:\n    from mnist_speedup import words\n")
    assert codedigest._imported(module, "mnist_speedup") == {"mnist_speedup", "mnist_speedup.words"}
    module.write_text(
        "def f(x):\n    match x:\n        case 1:\n            import mnist_speedup.atomic\n"
        "    with open(x):\n        from mnist_speedup import rulescript\n"
    )
    assert codedigest._imported(module, "mnist_speedup") == {
        "mnist_speedup",
        "mnist_speedup.atomic",
        "mnist_speedup.rulescript",
    }
