"""Every install the README gives ends with exactly one TensorFlow
distribution: checked offline from pyproject.toml's requirements and
markers, and (opt-in, needs the package index) by pip's own resolver."""

import json
import os
import subprocess
import sys
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from conftest import ROOT

TENSORFLOWS = {"tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tensorflow-macos"}
PLATFORMS = {
    "linux x86_64": {"sys_platform": "linux", "platform_machine": "x86_64", "platform_system": "Linux"},
    "linux aarch64": {"sys_platform": "linux", "platform_machine": "aarch64", "platform_system": "Linux"},
    "macOS arm64": {"sys_platform": "darwin", "platform_machine": "arm64", "platform_system": "Darwin"},
    "windows": {"sys_platform": "win32", "platform_machine": "AMD64", "platform_system": "Windows"},
}
#: the installs the README gives: `pip install -e .` and `pip install -e '.[gpu]'` (dev/slurm add no TF)
VARIANTS = {"default": (), "gpu": ("gpu",), "tests": ("dev",), "slurm": ("slurm",)}


def requirements(extras) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in extras:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return reqs


def tensorflow_distributions(extras, platform: dict) -> set[str]:
    env = {
        "python_version": "3.11",
        "python_full_version": "3.11.7",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "os_name": "posix",
        **platform,
    }
    names = set()
    for req in requirements(extras):
        for extra in [""] + sorted(extras):
            if req.marker is None or req.marker.evaluate({**env, "extra": extra}):
                names.add(canonicalize_name(req.name))
    return names & TENSORFLOWS


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_each_install_has_exactly_one_tensorflow(variant, platform):
    assert tensorflow_distributions(VARIANTS[variant], PLATFORMS[platform]) == {"tensorflow"}


def test_gpu_extra_brings_cuda_and_nvml_on_linux_x86_64():
    reqs = requirements(("gpu",))
    linux = {**PLATFORMS["linux x86_64"], "python_version": "3.11", "extra": "gpu"}
    cuda = [r for r in reqs if canonicalize_name(r.name) == "tensorflow" and "and-cuda" in r.extras]
    assert cuda and all(r.marker is None or r.marker.evaluate(linux) for r in cuda)
    assert "nvidia-ml-py" in {canonicalize_name(r.name) for r in reqs}


def pip_report(tmp_path, spec: str, timeout: float):
    """What pip would install for ``pip install -e <spec>`` from the index (its --report file)."""
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    subprocess.run([*command, "--report", str(report), "-e", spec], cwd=ROOT, check=True, timeout=timeout)
    return report


@pytest.mark.skipif(not os.environ.get("MNIST_SPEEDUP_PIP_RESOLVE"), reason="opt-in: needs the package index")
@pytest.mark.parametrize("extra", ["", "[gpu]", "[gpu,jax-gpu]"])
def test_pip_resolves_one_tensorflow(tmp_path, extra):
    report = pip_report(tmp_path, f".{extra}", timeout=900)
    names = {canonicalize_name(i["metadata"]["name"]) for i in json.loads(report.read_text())["install"]}
    assert names & TENSORFLOWS == {"tensorflow"}
    if extra:
        assert any(n.startswith("nvidia-cudnn") for n in names) and "nvidia-ml-py" in names
    if "jax-gpu" in extra:  # TensorFlow's and JAX's CUDA libraries are one set of CUDA 12 wheels
        assert {"jax", "jaxlib", "jax-cuda12-plugin", "optax"} <= names
        cuda = {n for n in names if n.startswith("nvidia-") and n != "nvidia-ml-py"}
        assert cuda and all(n.endswith("-cu12") for n in cuda), sorted(cuda)


def _cuda_pins(extra) -> dict[str, str]:
    reqs = [r for r in requirements((extra,)) if canonicalize_name(r.name).endswith("-cu12")]
    return {canonicalize_name(r.name): str(r.specifier) for r in reqs}


@pytest.mark.parametrize("extra", ["gpu", "jax-gpu"])
def test_every_cuda_wheel_is_pinned_exactly(extra):
    """Issue 28 (5): tensorflow[and-cuda] asks for ranges (cudnn >=9.3,<10),
    so an unpinned install drifts. Planted once: cudnn as >=9.3 failed."""
    pins = _cuda_pins(extra)
    assert {"nvidia-cudnn-cu12", "nvidia-cublas-cu12", "nvidia-cuda-runtime-cu12"} <= set(pins)
    assert all(spec.startswith("==") and "," not in spec for spec in pins.values()), pins
    shared = set(_cuda_pins("gpu")) & set(pins)
    assert all(_cuda_pins("gpu")[n] == pins[n] for n in shared)  # one set of CUDA wheels for both frameworks


@pytest.mark.skipif(not os.environ.get("MNIST_SPEEDUP_PIP_RESOLVE"), reason="opt-in: needs the package index")
def test_pip_resolves_the_cuda_wheels_to_exactly_the_pins(tmp_path):
    report = pip_report(tmp_path, ".[gpu,jax-gpu]", timeout=1200)
    resolved = {
        canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"]
        for i in json.loads(report.read_text())["install"]
    }
    pins = _cuda_pins("gpu") | _cuda_pins("jax-gpu")
    assert {n: f"=={v}" for n, v in resolved.items() if n.endswith("-cu12")} == pins
