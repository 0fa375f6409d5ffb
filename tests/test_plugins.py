"""House 4 (5): plug-ins found by folder. A toy workload type (tests/toy_plugin/: a new layer kind and two new
product kinds) is one spec file plus one layer file per framework, copied into a copy of the workflow and
nothing else edited; the workflow plans it, and each framework calibrates at its products and trains it."""

import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, planned_jobs, snakemake, synthetic_npz, synthetic_workdir
from framework_runs import calibrate_and_train

TOY = ROOT / "tests" / "toy_plugin"
FRAMEWORKS = ("tensorflow", "jax", "pytorch")
PACKAGE = "workflow/mnist_speedup"


#: the toy's entry in the schema: its keys and their defaults
SCHEMA_ENTRY = "        toy: {hidden: [256]}\n"


def add_toy(workdir):
    """The toy's files, where a user adds a workload type, and its keys in the schema."""
    schema = workdir / "workflow" / "schemas" / "config.schema.yaml"
    text = schema.read_text(encoding="utf-8")
    anchor = "        cnn: {filters: [32, 64], kernel: 5, pool: 2, dense: 1024, dropout: 0.5}\n"
    assert anchor in text
    schema.write_text(text.replace(anchor, anchor + SCHEMA_ENTRY), encoding="utf-8")
    shutil.copy(TOY / "workload" / "toy.py", workdir / PACKAGE / "workloads" / "toy.py")
    for name in FRAMEWORKS:
        shutil.copy(TOY / name / "toy.py", workdir / PACKAGE / "measure" / "frameworks" / name / "layers" / "toy.py")


@pytest.fixture(scope="module")
def toy_workdir(tmp_path_factory):
    devices = {f"cpu-{name}": {"type": "cpu", "threads": 1, "framework": name} for name in FRAMEWORKS}
    workdir, cfg, _ = synthetic_workdir(
        tmp_path_factory.mktemp("toy"), devices=devices, baseline="cpu-jax", workloads={"toy": {"type": "toy"}}
    )
    add_toy(workdir)
    return workdir, cfg


def test_the_workflow_plans_the_toy_on_every_framework(toy_workdir):
    workdir, cfg = toy_workdir
    planned = planned_jobs(snakemake(workdir, "-n", "--cores", "1", "--configfile", str(cfg)))
    assert planned["calibrate"] == 3 and planned["train"] == 6  # 3 devices x 2 seeds, one workload


def test_the_training_digest_covers_the_toy_files(toy_workdir):
    """A run's code digest covers every plug-in file it may run (codedigest.py follows the PLUGINS globs), so
    adding or editing the toy's files reruns the training they change. Planted once: a digest without the
    globs left the toy's files out."""
    workdir, _ = toy_workdir
    package = workdir / PACKAGE
    code = (
        f"import sys; sys.path.insert(0, {str(workdir / 'workflow')!r}); from mnist_speedup import codedigest; "
        f"print('\\n'.join(str(p) for p in codedigest.modules({str(workdir / 'workflow' / 'scripts' / 'train.py')!r})))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    covered = {p for p in proc.stdout.splitlines() if p}
    toy = {str(package / "workloads" / "toy.py")}
    toy |= {str(package / "measure" / "frameworks" / name / "layers" / "toy.py") for name in FRAMEWORKS}
    assert toy <= covered, proc.stderr


@pytest.mark.slow
def test_each_framework_calibrates_and_trains_the_toy(toy_workdir, tmp_path):
    """Each framework in turn: the calibration runs the toy's products (the batched ones from their Einstein
    sums alone), a run trains it on synthetic digits past chance, and its record reads back through the strict
    reader with the toy's own FLOP count."""
    workdir, _ = toy_workdir
    npz = synthetic_npz(tmp_path / "d.npz")
    b, n, t = 50, 256, 16
    dense = 2 * (2 * b * 784 * n + 2 * b * n * 10) + 2 * b * 10 * n  # forward, weight gradients, one input gradient
    elementwise = 2 * b * (n + 10) + 2 * b * n + 4 * b * n + 5 * b * 10 + 12 * (784 * n + n + n * 10 + 10)
    by_hand = dense + 6 * 2 * b * t**3 + elementwise  # the Gram layer: two products forward, four backward
    for name in FRAMEWORKS:
        result = calibrate_and_train(workdir / "workflow", {"type": "toy", "hidden": [256]}, name, npz, tmp_path)
        kinds = [product[0] for product in result["calibrated"]]
        assert kinds.count("bmm") == 4 and kinds.count("bmm_nt") == 2, name
        assert result["numpy"], name  # NumPy runs the sums too (no convolution in the toy)
        assert result["flops"] == by_hand, name
        assert result["accuracy"] > 0.3, (name, result["accuracy"])  # chance is 0.1
