"""Shared fixtures: synthetic MNIST in valid IDX/gzip form, and a fresh copy
of the workflow to run the real `snakemake` command in."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# the package's folder; benchmarks/mutation.sh runs the tests on a copy laid out as src/
sys.path.insert(0, str(ROOT / os.environ.get("MNIST_SPEEDUP_PACKAGE_ROOT", "workflow")))

# the longest test files first on xdist's workers (tests/scheduling.py)
pytest_plugins = ["scheduling"]

WORKFLOW_PARTS = ("Snakefile", "config", "workflow", "profiles", "envs")


def idx_bytes(array: np.ndarray) -> bytes:
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(">" + "I" * array.ndim, *array.shape)
    return header + array.astype(np.uint8).tobytes()


def synthetic_mnist(n_train: int = 1200, n_test: int = 300, seed: int = 0):
    """Learnable fake digits: a fixed random prototype per class plus noise."""
    rng = np.random.default_rng(seed)
    prototypes = rng.integers(0, 256, size=(10, 28, 28))

    def draw(n):
        labels = rng.integers(0, 10, size=n).astype(np.uint8)
        noise = rng.normal(0, 40, size=(n, 28, 28))
        images = np.clip(prototypes[labels] + noise, 0, 255).astype(np.uint8)
        return images, labels

    train_x, train_y = draw(n_train)
    test_x, test_y = draw(n_test)
    return {
        "train-images-idx3-ubyte": idx_bytes(train_x),
        "train-labels-idx1-ubyte": idx_bytes(train_y),
        "t10k-images-idx3-ubyte": idx_bytes(test_x),
        "t10k-labels-idx1-ubyte": idx_bytes(test_y),
    }


def synthetic_npz(path: Path, validation_size: int = 200) -> Path:
    """Synthetic MNIST prepared as the prepare_mnist rule prepares it, saved at ``path``."""
    from mnist_speedup.data import mnist

    raw = {name: mnist.parse_idx(content, 3 if "images" in name else 1) for name, content in synthetic_mnist().items()}
    arrays = mnist.split(
        raw["train-images-idx3-ubyte"],
        raw["train-labels-idx1-ubyte"],
        raw["t10k-images-idx3-ubyte"],
        raw["t10k-labels-idx1-ubyte"],
        validation_size=validation_size,
    )
    np.savez(path, **arrays)
    return path


def write_mirror(folder: Path, contents: dict[str, bytes]) -> dict[str, str]:
    """Write gzip files into ``folder``; return their decompressed SHA-256."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in contents.items():
        (folder / f"{name}.gz").write_bytes(gzip.compress(data, mtime=0))
    return {name: hashlib.sha256(data).hexdigest() for name, data in contents.items()}


@pytest.fixture(scope="session")
def synthetic_contents():
    return synthetic_mnist()


@pytest.fixture
def mirror(tmp_path, synthetic_contents):
    """A local mirror folder with synthetic MNIST, and its checksums."""
    sums = write_mirror(tmp_path / "mirror", synthetic_contents)
    return tmp_path / "mirror", sums


def copy_workflow(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for part in WORKFLOW_PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / part)
    return dest


def tiny_config(mirror_dir: Path, sums: dict[str, str], **overrides) -> dict:
    config = {
        "mirrors": [str(mirror_dir)],
        "mnist_sha256": sums,
        "validation_size": 200,
        # JAX: its import takes about 2 s where TensorFlow's takes 8-10 s, in each of the slow lane's many
        # training jobs (CI's budget); TensorFlow's own end-to-end path runs in test_module and test_realdata
        "devices": {
            "cpu": {"type": "cpu", "threads": 2, "framework": "jax"},
            "cpu1": {"type": "cpu", "threads": 1, "framework": "jax"},
        },
        "baseline": "cpu",
        "seeds": [1, 2],
        "batch_sizes": [100],
        "epochs": 2,
        "warmup_epochs": 1,
        "step_samples": 5,
        "calibration": {"square_size": 256, "repeats": 3},  # small: quick, still a median of 3
        "figure": {"formats": ["pdf", "png"], "dpi": 100},
    }
    config.update(overrides)
    return config


def write_config(workdir: Path, config: dict, name: str = "test.yaml") -> Path:
    path = workdir / "config" / name
    path.write_text(yaml.safe_dump(config))
    return path


def synthetic_workdir(root: Path, name: str = "wf", **overrides):
    """A workflow copy under ``root`` with a synthetic MNIST mirror and a
    tiny config (``overrides`` applied). Returns (workdir, config path, config)."""
    mirror_dir = root / "mirror"
    sums = write_mirror(mirror_dir, synthetic_mnist())
    workdir = copy_workflow(root / name)
    config = tiny_config(mirror_dir, sums, **overrides)
    return workdir, write_config(workdir, config), config


def only_framework(root: Path, name: str) -> tuple[dict, list[str]]:
    """An environment in which only framework ``name`` can be imported: stand-ins for every other framework's
    modules, earlier on the path, that raise on import. Returns (env for `snakemake`, the blocked modules)."""
    from mnist_speedup.spec import frameworks

    blocked = root / f"blocked-but-{name}"
    others = [m for fw in frameworks.declarations().values() if fw.name != name for m in fw.modules]
    for module in others:
        (blocked / module).mkdir(parents=True)
        (blocked / module / "__init__.py").write_text(f"raise ImportError('{module} is blocked in this test')\n")
    return {"PYTHONPATH": str(blocked)}, others


def assert_ran_alone(workdir: Path, name: str, others: list[str]) -> None:
    """Every rule of the workflow (and its bundle) ran with only framework ``name`` importable: its records say so
    and carry its own software versions, the report names its networks, and no job tried to import another."""
    from mnist_speedup.records import fields
    from mnist_speedup.spec import frameworks

    results = workdir / "results" / "default"
    assert (results / "report.md").is_file() and list(results.glob("bundle-*.tar.gz"))
    declared = frameworks.declarations()[name]
    for path in (results / "runs").rglob("seed*.json"):
        record = json.loads(path.read_text())
        assert record["environment"]["framework"] == name and record["environment"]["tensorflow"] is None, path
        assert all(record["environment"][field] for field in declared.software), path  # its own versions
        assert fields.undeclared(record) == [], path  # the field table is complete for what these runs assemble
    report = (results / "report.md").read_text()
    assert f"Models ({declared.words})" in report or f"Model ({declared.words})" in report
    # the stand-ins really block: a job that imported another framework would have failed
    logs = "".join(p.read_text() for p in (workdir / "logs").rglob("*.log"))
    assert not any(f"{module} is blocked" in logs for module in others)


def snakemake(workdir: Path, *args: str, check: bool = True, timeout: float = 900, env=None):
    """Run the real snakemake command line in ``workdir``."""
    cmd = [sys.executable, "-m", "snakemake", *args]
    run_env = {**os.environ, "MNIST_SPEEDUP_LOCK_DIR": str(workdir), **(env or {})}
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout, env=run_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@contextlib.contextmanager
def put_back(workdir: Path, parts=("results", "logs", ".snakemake/metadata", ".snakemake/incomplete")):
    """On leaving, ``workdir``'s results, logs and Snakemake's records of them are as they were on entering (the files,
    their times and their metadata), whatever the test's `snakemake` calls did: the next test finds the run as it
    was, without a run of the presentation to restore it. Later plans that expect nothing to do check it."""
    saved = Path(tempfile.mkdtemp(prefix="kept-", dir=workdir.parent))
    for part in [part for part in parts if (workdir / part).exists()]:
        shutil.copytree(workdir / part, saved / part, symlinks=True)  # copy2: the times too
    try:
        yield
    finally:
        for part in parts:
            shutil.rmtree(workdir / part, ignore_errors=True)
            if (saved / part).exists():
                shutil.copytree(saved / part, workdir / part, symlinks=True)
        shutil.rmtree(saved)


def planned_jobs(proc) -> dict[str, int]:
    """Job counts from a dry run's 'Job stats' table (a finished process, or its text)."""
    counts: dict[str, int] = {}
    lines = (proc if isinstance(proc, str) else proc.stdout + proc.stderr).splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("Job stats:"))
    except StopIteration:
        return counts  # "Nothing to be done"
    for line in lines[start + 3 :]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        if parts[0] != "total":
            counts[parts[0]] = int(parts[1])
    return counts


def plan_here(workdir: Path, configfile: Path) -> dict[str, int]:
    """The job counts of `snakemake -n --cores 2 --configfile F` in ``workdir``, planned in this process through
    Snakemake's API: the same parse and plan without a new interpreter that imports Snakemake again (about
    2 s of each of the slow lane's many plans). Only where the workflow copy's code is this checkout's: the
    package is imported once per process (its stage digests read this checkout's files), so a test that
    edits the copy's code plans with the command instead."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    import mnist_speedup

    here, copy = Path(mnist_speedup.__file__).parent, workdir / "workflow" / "mnist_speedup"
    edited = [
        p
        for p in copy.rglob("*.py")
        if not (here / p.relative_to(copy)).is_file() or p.read_bytes() != (here / p.relative_to(copy)).read_bytes()
    ]
    assert not edited, f"{edited}: the copy's code differs from this process's; plan with `snakemake -n` instead"
    text, cwd, saved, path = io.StringIO(), os.getcwd(), dict(os.environ), list(sys.path)
    os.environ["MNIST_SPEEDUP_LOCK_DIR"] = str(workdir)
    try:
        with contextlib.redirect_stderr(text), contextlib.redirect_stdout(text), SnakemakeApi(OutputSettings()) as api:
            workflow = api.workflow(
                ResourceSettings(cores=2),
                ConfigSettings(configfiles=[Path(configfile)]),
                snakefile=workdir / "Snakefile",
                workdir=workdir,
            )
            workflow.dag().execute_workflow(executor="dryrun")
    finally:  # what the Snakefile's parse changes in this process: the directory, the environment, the path
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved)
        sys.path[:] = path
    return planned_jobs(text.getvalue())


def plan_config(workdir: Path, config: dict, name: str = "changed.yaml") -> dict[str, int]:
    """``plan_here`` for ``config``, written into the copy as config/``name``."""
    return plan_here(workdir, write_config(workdir, config, name))


@pytest.fixture(autouse=True)
def _restore_environment():
    """Opening a framework in a test's own process sets the process environment
    (threads, hidden GPUs); later tests' subprocesses must not inherit it."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)
