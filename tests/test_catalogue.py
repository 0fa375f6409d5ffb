"""Issue 49 (3): the catalogue's test data and CI shape. `.test/config/config.yaml` runs as the catalogue's
template runs it (`snakemake --cores 2 --directory .test`), offline, on a real MNIST subset shipped in
`.test/data/mnist` (checked through mnist_sha256), and the GitHub workflow calls `.ci/run`."""

import gzip
import os
import shutil
import struct
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, copy_workflow, snakemake

TEST = ROOT / ".test"
COUNTS = {"train-images-idx3-ubyte": 5000, "train-labels-idx1-ubyte": 5000,
          "t10k-images-idx3-ubyte": 1000, "t10k-labels-idx1-ubyte": 1000}  # fmt: skip


@pytest.mark.slow
def test_the_test_configuration_runs_as_the_catalogue_runs_it(tmp_path):
    workdir = copy_workflow(tmp_path / "wf")
    shutil.copytree(TEST / "config", workdir / ".test" / "config")
    shutil.copytree(TEST / "data", workdir / ".test" / "data")
    snakemake(workdir, "--cores", "2", "--directory", ".test")
    results = workdir / ".test" / "results" / "default"
    summary = pd.read_csv(results / "summary.csv")
    assert len(summary) == 4 and summary.test_accuracy.min() > 0.5  # 2 devices x 2 seeds, real digits learnt
    assert (results / "report.md").is_file() and (results / "figures" / "speedup.png").is_file()


@pytest.mark.skipif(not os.environ.get("MNIST_LOCAL_MIRROR"), reason="opt-in: MNIST_LOCAL_MIRROR")
def test_the_shipped_subset_is_the_head_of_the_canonical_files_byte_for_byte():
    mirror = Path(os.environ["MNIST_LOCAL_MIRROR"])
    for name, n in COUNTS.items():
        raw = gzip.decompress((mirror / f"{name}.gz").read_bytes())
        header, item = (16, 784) if "images" in name else (8, 1)
        expected = raw[:4] + struct.pack(">I", n) + raw[8:header] + raw[header : header + n * item]
        assert gzip.decompress((TEST / "data" / "mnist" / f"{name}.gz").read_bytes()) == expected, name


def test_the_github_workflow_calls_the_one_ci_script():
    workflow = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    assert "run: bash .ci/run" in workflow
