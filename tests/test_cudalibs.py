"""The CUDA library versions a run records are the loaded libraries' own
(issue 28 (5)), not the framework's build information, with stand-in
libraries that answer as cuDNN, cuBLAS and the CUDA runtime do."""

import pandas as pd

from mnist_speedup.analysis import checks
from mnist_speedup.measure import cudalibs, environment

SITE = "/venv/lib/python3.11/site-packages/nvidia"
MAPS = f"""\
7f0000000000-7f0000001000 r--p 00000000 08:01 1 {SITE}/cudnn/lib/libcudnn.so.9
7f0000001000-7f0000002000 r-xp 00001000 08:01 1 {SITE}/cudnn/lib/libcudnn.so.9
7f0000003000-7f0000004000 r--p 00000000 08:01 2 {SITE}/cublas/lib/libcublas.so.12
7f0000005000-7f0000006000 r--p 00000000 08:01 3 {SITE}/cuda_runtime/lib/libcudart.so.12
7f0000007000-7f0000008000 rw-p 00000000 00:00 0
7f0000009000-7f000000a000 r--p 00000000 08:01 4 /usr/lib/x86_64-linux-gnu/libc.so.6
"""


class FakeLibrary:
    """Answers as the real library's version call does (out-parameters by reference)."""

    def __init__(self, cudnn=None, cublas=None, cudart=None):
        self.cudnnGetVersion = (lambda: cudnn) if cudnn is not None else None
        self._cublas, self._cudart = cublas, cudart

    def cublasGetProperty(self, prop, ref):
        ref._obj.value = self._cublas[prop]
        return 0

    def cudaRuntimeGetVersion(self, ref):
        ref._obj.value = self._cudart
        return 0


def fake_load(path):
    return {
        "libcudnn.so.9": FakeLibrary(cudnn=92800),
        "libcublas.so.12": FakeLibrary(cublas=(12, 9, 3)),
        "libcudart.so.12": FakeLibrary(cudart=12090),
    }[path.rsplit("/", 1)[1]]


def test_the_loaded_libraries_are_found_in_the_process_map():
    assert cudalibs.loaded(MAPS) == {
        "cudnn_version": f"{SITE}/cudnn/lib/libcudnn.so.9",
        "cublas_version": f"{SITE}/cublas/lib/libcublas.so.12",
        "cuda_version": f"{SITE}/cuda_runtime/lib/libcudart.so.12",
    }


def test_each_library_reports_its_own_version():
    """cuDNN 9 encodes 9.28.0 as 92800 (8.x as M*1000 + m*100 + p); the
    runtime 12.9 as 12090. Planted once: the cuDNN 8 decoding applied to
    92800 gave 92.8.0 and failed."""
    assert cudalibs.versions(MAPS, fake_load) == {
        "cudnn_version": "9.28.0",
        "cublas_version": "12.9.3",
        "cuda_version": "12.9",
    }
    eight = cudalibs.versions(MAPS, lambda p: FakeLibrary(cudnn=8906, cublas=(11, 11, 3), cudart=11080))
    assert eight == {"cudnn_version": "8.9.6", "cublas_version": "11.11.3", "cuda_version": "11.8"}


def test_a_library_that_does_not_answer_is_null_and_never_ends_the_run():
    def broken(path):
        raise OSError("cannot open shared object file")

    assert cudalibs.versions(MAPS, broken) == dict.fromkeys(cudalibs.LIBRARIES)
    assert cudalibs.versions("", fake_load) == dict.fromkeys(cudalibs.LIBRARIES)  # a CPU run loads none


def test_a_library_not_loaded_keeps_the_frameworks_build_version_marked_as_such():
    env = {"cudnn_version": "9", "cuda_version": "12.5.1", "cublas_version": None}
    loaded = {"cudnn_version": None, "cublas_version": "12.9.3", "cuda_version": "12.9"}
    assert environment.loaded_cuda(env, loaded) == {
        "cudnn_version": "9 (build)",
        "cublas_version": "12.9.3",
        "cuda_version": "12.9",
    }


def test_the_software_warning_compares_the_gpu_stack_only_between_gpus():
    rows = [
        {"device": d, "framework": "tensorflow", "cudnn_version": v, "gpu_driver": g}
        for d, v, g in (("gpu", "9.28.0", "580.1"), ("gpu_b", "9.3.0", "580.1"), ("cpu", None, None))
    ]
    df = pd.DataFrame(rows)
    warnings = checks.software_differences(df, "gpu")
    assert warnings == ["gpu ran cudnn_version 9.28.0, gpu_b 9.3.0: part of the speedup may be the GPU software stack"]
