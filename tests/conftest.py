"""Shared fixtures: synthetic MNIST in valid IDX/gzip form, and a fresh copy
of the workflow to run the real `snakemake` command in."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

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
        "devices": {"cpu": {"type": "cpu", "threads": 2}, "cpu1": {"type": "cpu", "threads": 1}},
        "baseline": "cpu",
        "seeds": [1, 2],
        "batch_sizes": [100],
        "epochs": 2,
        "warmup_epochs": 1,
        "step_samples": 5,
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


def snakemake(workdir: Path, *args: str, check: bool = True, timeout: float = 900, env=None):
    """Run the real snakemake command line in ``workdir``."""
    cmd = [sys.executable, "-m", "snakemake", *args]
    run_env = {**os.environ, "MNIST_SPEEDUP_LOCK_DIR": str(workdir), **(env or {})}
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout, env=run_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def planned_jobs(proc) -> dict[str, int]:
    """Job counts from a dry run's 'Job stats' table."""
    counts: dict[str, int] = {}
    lines = (proc.stdout + proc.stderr).splitlines()
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
