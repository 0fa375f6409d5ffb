"""Rerun digests: a stage's digest covers exactly the modules its rule script
imports, directly or through other modules, and nothing else."""

from conftest import ROOT
from mnist_speedup import codedigest

SCRIPTS = ROOT / "workflow" / "scripts"

#: what the training process runs, by hand from reading the imports of
#: scripts/train.py and of each module it reaches
TRAINING = {
    "__init__.py", "atomic.py", "calibrate.py", "configinput.py", "devices.py", "energy.py", "environment.py",
    "frameworks/__init__.py", "frameworks/base.py", "frameworks/jax_backend.py", "frameworks/jax_model.py",
    "frameworks/jax_training.py", "frameworks/tensorflow_backend.py", "frameworks/tf_numerics.py",
    "frameworks/tf_training.py", "hostlock.py", "interference.py", "measurements.py", "mnist.py", "model.py",
    "numerics.py", "progress.py", "rulescript.py", "run.py", "schema.py", "seal.py", "trainer.py", "urls.py",
}  # fmt: skip
#: the analysis and presentation, which no training may depend on
ANALYSIS = ("stats.py", "compare.py", "tta.py", "parity.py", "scaling.py", "drift.py", "checks.py", "aggregate.py",
            "summary.py", "replication.py", "figure.py", "report/__init__.py")  # fmt: skip


def _names(script):
    return {p.relative_to(codedigest.ROOT).as_posix() for p in codedigest.modules(SCRIPTS / script)}


def test_the_training_digest_covers_exactly_what_training_imports():
    """Against the list above, transitive imports included (frameworks/ is
    reached only through trainer.py and calibrate.py). Planted once: a
    digest of direct imports only missed frameworks/ and failed."""
    assert _names("train.py") == TRAINING


def test_editing_an_analysis_module_reruns_no_training():
    """Issue 31 (6): run.summary_row imported stats inside a function, so a
    comment in stats.py reran every training run. The row now lives in
    summary.py. Planted once: `from . import stats` back in run.py failed."""
    training = _names("train.py")
    assert not training & set(ANALYSIS)
    assert "stats.py" in _names("aggregate.py") and "summary.py" in _names("aggregate.py")
