"""A run record's flat row in summary.csv, in named groups of columns.

Apart from run.py so that the training process's code (and so its rerun
digest) does not include the statistics this needs.
"""

from __future__ import annotations

import json

from mnist_speedup.analysis import stats
from mnist_speedup.records import seal
from mnist_speedup.spec import frameworks, run

#: the GPU stack, as the loaded libraries report it: compared between devices that both have it
GPU_SOFTWARE = ("gpu_driver", "cuda_version", "cudnn_version", "cublas_version")


def _identity(record: dict) -> dict:
    from mnist_speedup.spec import devices, workloads

    env = record["environment"]
    return {
        "workload": record["workload"],
        "workload_spec": json.dumps(record["workload_spec"], sort_keys=True),
        "workload_words": workloads.words(record["workload_spec"]),
        "host": env["hostname"],
        "machine_id": env.get("machine_id"),
        "device_label": record["device"],
        **devices.columns(record["device_spec"], env),
        "cpu_model": env.get("cpu_model"),
        "batch_size": record["batch_size"],
        "seed": record["seed"],
    }


def _cell(value):
    """A setting as one cell: a mapping (Adam's) as its JSON text."""
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else value


def _settings(record: dict) -> dict:
    """Every setting of the run's spec (spec/run.py's RunSpec, listed there once), then what its loop did."""
    loop = record["loop"]
    return {k: _cell(record.get(k)) for k in run.RunSpec.settings()} | {
        "samples_per_epoch": record["samples_per_epoch"],
        "steps_per_call_effective": loop["steps_per_call"],
        "calls_per_epoch": loop["calls_per_epoch"],
        "loop": loop.get("description"),
    }


def _timing(record: dict) -> dict:
    t, loop = record["timing"], record["loop"]
    overhead = record.get("host_overhead") or {}
    per_call = overhead.get("per_call_s")
    return {
        "first_epoch_s": t["first_epoch_s"],
        "steady_epoch_mean_s": t["steady_epoch_mean_s"],
        "steady_epoch_std_s": t.get("steady_epoch_std_s"),
        "epoch_cv": stats.cv(t["epoch_s"][record["warmup_epochs"] :]),
        "samples_per_s": t["samples_per_s"],
        "step_ms_median": t.get("step_ms_median"),
        "host_overhead_per_call_s": per_call,
        "host_share_of_one_call_step": overhead.get("share_of_one_call_step"),
        "host_share_of_timed_epoch": (
            per_call * loop["calls_per_epoch"] / t["steady_epoch_mean_s"] if per_call is not None else None
        ),
    }


def _busiest_neighbour(record: dict) -> float | None:
    """The most cores other processes used in a steady epoch (None: not measured)."""
    cores = (record.get("interference") or {}).get("epoch_other_cores") or []
    steady = [c for c in cores[record["warmup_epochs"] :] if c is not None]
    return max(steady) if steady else None


def _resources(record: dict) -> dict:
    memory, energy = record["memory"], record["energy"]
    return {
        "flops_per_step": record["flops"]["per_step"],
        "achieved_flops_per_s": record["flops"]["achieved_per_s"],
        "probe_flops_per_s": (record.get("device_rate_probe") or {}).get("flops_per_s_median"),
        "host_peak_rss_bytes": memory.get("host_peak_rss_bytes"),
        "gpu_peak_bytes": memory.get("gpu_peak_bytes"),
        "energy_j_per_epoch": energy.get("joules_per_epoch"),
        "mean_watts": energy.get("mean_watts"),
        "energy_source": energy.get("source"),
        "energy_reason": energy.get("reason"),
        "other_cores_max": _busiest_neighbour(record),
        "machine_cores": record["environment"].get("logical_cores"),
        "loss_scale_skipped_steps": ((record.get("numerics") or {}).get("loss_scaling") or {}).get("skipped_steps"),
    }


def _outcome(record: dict, path, origin: str) -> dict:
    q, env = record["quality"], record["environment"]
    return {
        "final_train_loss": q["final_train_loss"],
        "val_accuracy": q["val_accuracy"],
        "test_accuracy": q["test_accuracy"],
        **{k: env.get(k) for k in frameworks.software() if k != "training_code"},
        **{k: env.get(k) for k in GPU_SOFTWARE},
        "training_code": record.get("training_code"),
        "data_digest": record.get("data_digest"),
        "started_at": record.get("started_at"),
        "finished_at": record.get("finished_at"),
        "origin": origin,
        "path": str(path),
        "record_sha256": record.get(seal.DIGEST_FIELD),
    }


def summary_row(record: dict, path, origin: str) -> dict:
    """The run's flat row in summary.csv, in named groups of columns."""
    return _identity(record) | _settings(record) | _timing(record) | _resources(record) | _outcome(record, path, origin)
