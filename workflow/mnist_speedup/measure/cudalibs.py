"""The CUDA libraries this process has loaded, with the versions the
libraries themselves report: not the framework's build information (which
says cuDNN "9" whatever 9.x the wheels installed). Read from
``/proc/self/maps`` after training, when the framework has loaded them.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

#: record field -> (library file name prefix, how to ask it its version)
LIBRARIES = {
    "cudnn_version": ("libcudnn.so", "cudnn"),
    "cublas_version": ("libcublas.so", "cublas"),
    "cuda_version": ("libcudart.so", "cudart"),
}


def loaded(maps: str) -> dict[str, str]:
    """{record field: path} of each library in ``maps`` (``/proc/self/maps``'s text)."""
    out = {}
    for line in maps.splitlines():
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        name = Path(path).name
        for field, (prefix, _) in LIBRARIES.items():
            if name.startswith(prefix) and field not in out:
                out[field] = path
    return out


def _cudnn(lib) -> str:
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    v = int(lib.cudnnGetVersion())
    major, rest = (v // 10000, v % 10000) if v >= 90000 else (v // 1000, v % 1000)  # 9.x: M*10000 + m*100 + p
    return f"{major}.{rest // 100}.{rest % 100}"


def _cublas(lib) -> str:
    parts = []
    for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
        value = ctypes.c_int()
        if lib.cublasGetProperty(prop, ctypes.byref(value)) != 0:
            raise OSError("cublasGetProperty failed")
        parts.append(str(value.value))
    return ".".join(parts)


def _cudart(lib) -> str:
    value = ctypes.c_int()
    if lib.cudaRuntimeGetVersion(ctypes.byref(value)) != 0:
        raise OSError("cudaRuntimeGetVersion failed")
    return f"{value.value // 1000}.{value.value % 1000 // 10}"


_ASK = {"cudnn": _cudnn, "cublas": _cublas, "cudart": _cudart}


def versions(maps: str | None = None, load=ctypes.CDLL) -> dict[str, str | None]:
    """{record field: version} of each CUDA library loaded here (None where
    it is not loaded or does not answer; a failure never ends a run)."""
    if maps is None:
        try:
            maps = Path("/proc/self/maps").read_text(encoding="utf-8", errors="replace")
        except OSError:
            maps = ""
    out: dict[str, str | None] = dict.fromkeys(LIBRARIES)
    for field, path in loaded(maps).items():
        try:
            out[field] = _ASK[LIBRARIES[field][1]](load(path))
        except (OSError, AttributeError, TypeError, ValueError):
            out[field] = None
    return out
