"""Calibration records: one device's own rate at one workload's shapes.

The one home of the calibration record: where it lives, its schema version,
and its reader, which checks a record where it enters (a file copied from
another device, an older version, a dtype that is not the device's, a rate
no device reaches). Whether a calibration belongs to the runs it is matched
with is checked where both meet (``analysis.aggregate``).
"""

from __future__ import annotations

import math
from pathlib import Path

from mnist_speedup.records import run_record
from mnist_speedup.spec import devices, precisions

#: 2: one calibration per workload and device, at that workload's shapes
SCHEMA_VERSION = 2
OLDER = {1: "before workloads (one calibration per device, at the MLP's shapes only)"}
#: where a device's calibration at one workload's shapes lives under an experiment's results folder
PATH = "calibration/{workload}/{device}.json"
REGEX = PATH.replace(".", r"\.").format(workload=devices.LABEL_PATTERN, device=devices.LABEL_PATTERN)
#: no single device sustains 100 PFLOP/s (an NVIDIA H200 does about 1 PFLOP/s dense in bfloat16)
MAX_FLOPS_PER_S = 1e17
FIX = "Fix: delete it and run snakemake again (it is measured again); in another machine's folder, ask for a fresh bundle."


def files(results_dir) -> list[Path]:
    return sorted(Path(results_dir).glob(PATH.format(workload="*", device="*")))


def _refuse(path, problem: str) -> run_record.RecordError:
    return run_record.RecordError(f"{path}: {problem}. {FIX}")


def load(path) -> dict:
    """A calibration record, read back strictly and checked where it enters."""
    try:
        data = run_record.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _refuse(path, f"not a readable calibration record ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict):
        raise _refuse(path, "not a calibration record (not a JSON object)")
    run_record.check_digest(data, str(path))
    run_record.check_names(data, str(path))
    run_record.check_names(data, str(path), "workload")
    _check_version(data, path)
    _check_place(data, path)
    _check_dtype(data, path)
    rows(data, path)  # every rate checked
    return data


def _check_version(data: dict, path) -> None:
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        known = isinstance(version, int) and not isinstance(version, bool) and version in OLDER
        when = OLDER[version] if known else "by a version of this workflow this code does not know"
        raise _refuse(path, f"calibration schema_version {version!r} (this code reads {SCHEMA_VERSION}): made {when}")


def _check_place(data: dict, path) -> None:
    """A calibration describes the device and workload its path names."""
    folder, name = Path(path).parent.name, Path(path).stem
    if (data["workload"], data["device"]) != (folder, name):
        raise _refuse(
            path,
            f"it is the calibration of device {data['device']!r} at workload {data['workload']!r}, "
            f"but lies where device {name!r} at workload {folder!r} belongs (a file copied under another name)",
        )


def _check_dtype(data: dict, path) -> None:
    spec = data.get("device_spec")
    if not isinstance(spec, dict) or not isinstance(data.get("workload_spec"), dict):
        raise _refuse(path, "device_spec or workload_spec is missing or not a mapping")
    precision = precisions.name_of(spec)
    if precision not in precisions.PRECISIONS:
        raise _refuse(path, f"device_spec.precision {precision!r} is not one of {sorted(precisions.PRECISIONS)}")
    want = precisions.compute_dtype(precision)
    if data.get("dtype") != want:
        raise _refuse(path, f"dtype is {data.get('dtype')!r}, but a {precision} device computes in {want}")


def _rate(value, path, where: str) -> float:
    rate = float(value)
    if not (math.isfinite(rate) and 0 < rate <= MAX_FLOPS_PER_S):
        raise _refuse(path, f"the rate {where} is {value!r} FLOP/s, not a positive rate up to {MAX_FLOPS_PER_S:.0e}")
    return rate


def rows(data: dict, path) -> list[dict]:
    """One row per batch size: the calibrated rate, as summary.csv joins it."""
    try:
        square = _rate(data["square"]["flops_per_s_median"], path, "of the square product")
        out = []
        for bs, result in data["workload_shapes"].items():
            numpy = (result.get("numpy") or {}).get("flops_per_s_median")
            out.append(
                {
                    "host": data["environment"]["hostname"],
                    "device_label": data["device"],
                    "workload": data["workload"],
                    "batch_size": int(bs),
                    "calibrated_flops_per_s": _rate(result["flops_per_s_median"], path, f"at batch size {bs}"),
                    "numpy_flops_per_s": math.nan
                    if numpy is None
                    else _rate(numpy, path, f"of NumPy at batch size {bs}"),
                    "square_flops_per_s": square,
                    "calibration_started_at": data.get("started_at"),
                    "calibration_finished_at": data.get("finished_at"),
                }
            )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        if isinstance(exc, run_record.RecordError):
            raise
        raise _refuse(path, f"not a readable calibration record ({type(exc).__name__}: {exc})") from None
    return out


def refuse_mismatch(data: dict, path, field: str, found, ran, run_path) -> run_record.RecordError:
    """The calibration is not of the device or network its runs trained:
    another spec's rate is not this device's limit."""
    return _refuse(
        path,
        f"`{field}` is {found!r}, but the runs of device {data['device']!r} at workload {data['workload']!r} "
        f"({run_path}) have {ran!r}: the calibration of another device or network",
    )
