"""Crafted run records and calibrations, written as the training and calibration jobs write them, and the
tables the aggregation makes of them: for the unit tests of the reader, the statistics and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd


def make_record(device="cpu", batch_size=100, seed=1, epoch_s=(2.0, 1.0, 1.2), val_accuracy=None, **changes) -> dict:
    """A complete, valid run record (the schema the trainer writes), with
    hand-chosen epoch times and per-epoch validation accuracies; the MLP
    unless ``workload``/``workload_spec`` say otherwise."""
    from mnist_speedup.spec import workloads

    epoch_s = list(epoch_s)
    workload = changes.pop("workload", "mlp")
    workload_spec = changes.pop("workload_spec", {"type": "mlp"})
    workload_spec = workloads.of(workload_spec).with_defaults(workload_spec)
    flops = workloads.of(workload_spec).training_step_flops(batch_size)
    warmup = changes.pop("warmup_epochs", 1)
    steady = epoch_s[warmup:]
    mean = sum(steady) / len(steady)
    samples = changes.pop("samples_per_epoch", 1000)
    val = list(val_accuracy) if val_accuracy is not None else [0.5 + 0.1 * i for i in range(len(epoch_s))]
    threads = changes.pop("threads", 2)
    env = {
        "hostname": "h",
        "machine_id": "m1",
        "cpu_model": "x",
        "tensorflow": "2.21.0",
        "tensorlayer": "2.2.5",
        "keras": "3.15.1",
        "numpy": "2.4.6",
        "python": "3.11",
        "gpu_name": None,
    }
    env.update(changes.pop("environment", {}))
    record = {
        "schema_version": 3,
        "workload": workload,
        "workload_spec": workload_spec,
        "device": device,
        "device_spec": {"type": "cpu", "threads": threads},
        "batch_size": batch_size,
        "seed": seed,
        "epochs": len(epoch_s),
        "warmup_epochs": warmup,
        "samples_per_epoch": samples,
        "steps_per_epoch": samples // batch_size,
        "input_pipeline": "device",
        "deterministic": False,
        "learning_rate": 1e-4,
        "adam": {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-8},
        "train_samples": None,
        "step_samples": 5,
        "steps_per_call": "epoch",
        "timing": {
            "epoch_s": epoch_s,
            "first_epoch_s": epoch_s[0],
            "steady_epoch_mean_s": mean,
            "steady_epoch_std_s": None,
            "samples_per_s": samples / mean,
            "step_ms_median": 10.0,
            "epoch_eval_s": [0.01] * len(epoch_s),
        },
        "loop": {
            "steps_per_call": samples // batch_size,
            "calls_per_epoch": 1,
            "optimizer_steps_per_epoch": [samples // batch_size] * len(epoch_s),
            "description": "one call",
        },
        "host_overhead": {
            "per_call_s": 0.001,
            "one_call_step_s": 0.01,
            "compiled_step_s": 0.009,
            "share_of_one_call_step": 0.1,
        },
        "device_rate_probe": {"flops_per_s_median": 1e11},
        "memory": {"host_peak_rss_bytes": 700 * 2**20, "gpu_peak_bytes": None, "gpu_reason": "not a GPU run"},
        "energy": {"source": None, "reason": "RAPL not available", "joules_per_epoch": None, "mean_watts": None},
        "flops": {
            "per_step": flops,
            "per_epoch": flops * (samples // batch_size),
            "achieved_per_s": flops * (samples // batch_size) / mean,
        },
        "quality": {
            "epoch_loss": [1.0] * len(epoch_s),
            "epoch_val_accuracy": val,
            "epoch_val_loss": [1.0] * len(epoch_s),
            "final_train_loss": 0.5,
            "val_accuracy": val[-1],
            "test_accuracy": 0.91,
        },
        "started_at": f"2026-12-02T10:{seed:02d}:00.000+00:00",
        "environment": env,
        "training_code": "abc",
    }
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(record.get(key), dict):
            record[key] = {**record[key], **value}
        else:
            record[key] = value
    return _consistent(record)


def _consistent(record: dict) -> dict:
    """What a record derives from its raw fields, derived (records/invariants.py checks it), unless a test set it:
    the steady SD, the final training loss, and the framework's own software versions in its environment."""
    import statistics

    from mnist_speedup.spec import frameworks

    t, steady = record["timing"], record["timing"]["epoch_s"][record["warmup_epochs"] :]
    if t.get("steady_epoch_std_s") is None and len(steady) > 1:
        t["steady_epoch_std_s"] = statistics.stdev(steady)
    q = record["quality"]
    q["epoch_loss"] = [*q["epoch_loss"][:-1], q["final_train_loss"]]
    env, name = record["environment"], frameworks.name_of(record["device_spec"])
    env.setdefault("framework", name)
    for fw in frameworks.declarations().values():
        for field in fw.software:
            if fw.name != env["framework"]:
                env[field] = None
            elif env.get(field) is None:
                env[field] = "9.9.9"
    return record


def record_refusal(record: dict) -> str | None:
    """Why the record reader refuses ``record`` once sealed (None: it is accepted)."""
    from mnist_speedup.records import run_record, seal

    try:
        run_record.check(seal.seal(record), "rec.json")
    except run_record.RecordError as exc:
        return str(exc)
    return None


def make_calibration(device="cpu", host="h", workload="mlp", threads=2, **changes) -> dict:
    """A complete, valid calibration record of a ``threads``-thread CPU at
    the MLP's shapes (batch size 100), as calibrate.measure writes it."""
    from mnist_speedup.records import calibration
    from mnist_speedup.spec import workloads

    record = {
        "schema_version": calibration.SCHEMA_VERSION,
        "device": device,
        "workload": workload,
        "device_spec": {"type": "cpu", "threads": threads},
        "dtype": "float32",
        "workload_spec": workloads.of({"type": "mlp"}).with_defaults({"type": "mlp"}),
        "repeats": 3,
        "workload_shapes": {"100": {"flops_per_s_median": 1e10}},
        "square": {"flops_per_s_median": 2e10},
        "environment": {"hostname": host},
        "code": "abc",
    }
    for key, value in changes.items():
        record[key] = (
            {**record[key], **value} if isinstance(value, dict) and isinstance(record.get(key), dict) else value
        )
    return record


def write_calibration(folder: Path, record: dict, seal: bool = True, name: str | None = None) -> Path:
    """Write a calibration where the calibrate rule does (sealed)."""
    from mnist_speedup.records.seal import seal as seal_record

    path = folder / "calibration" / record["workload"] / f"{name or record['device']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(seal_record(record) if seal else record))
    return path


def write_records(folder: Path, records, seal: bool = True) -> list[Path]:
    """Write records as the training job does (sealed with their digest)."""
    from mnist_speedup.records.seal import seal as seal_record
    from mnist_speedup.spec.run import run_path

    paths = []
    for r in records:
        path = run_path(folder, r["workload"], r["device"], r["batch_size"], r["seed"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(seal_record(r) if seal else r))
        paths.append(path)
    return paths


def crafted_tables(folder: Path, records, baseline="cpu", target=0.95, prices=None):
    """Summary, speedup, time-to-accuracy and curves from crafted records,
    through the same functions the aggregate rule calls."""
    from mnist_speedup.analysis import aggregate, tta

    summary, curves = aggregate.load_runs(write_records(folder, records))
    base = aggregate.baseline_device(summary, baseline)
    speedup = aggregate.speedup_table(summary, base, prices)
    per_run = tta.per_run(curves, target)
    summary = summary.merge(per_run, on=["workload", "device", "batch_size", "seed"])
    table = tta.table(summary, per_run, base, target, prices)
    return summary, speedup, table, curves


def report_tables(summary, speedup, tta_table, baseline="cpu", target=0.95):
    """The report's tables from crafted_tables' parts: the drift and every derived table computed as the
    aggregation computes them (analysis/tables.py `derived`), none while rendering."""
    from mnist_speedup import words
    from mnist_speedup.analysis import drift, tables
    from mnist_speedup.report import markdown

    empty = pd.DataFrame()
    curves = pd.DataFrame(columns=["workload", "device", "batch_size", "epoch", "cumulative_s", "val_accuracy"])
    made = {
        "summary": summary,
        "speedup": speedup,
        "time_to_accuracy": tta_table,
        "best_against_best": empty,
        "drift": drift.table(summary),
        "time_budget": empty,
        "curves": curves,
    }
    made |= tables.derived(made, baseline, tables.Settings(baseline, target, 0.005), words.CI_LEVEL)
    return markdown.Tables.of(made)


def results_folder(tmp_path, host="box"):
    """A results folder of two CPU devices, 3 seeds each, and their calibrations, made on ``host``."""
    folder = tmp_path / "results"
    env = {"hostname": host, "machine_id": "m9"}
    write_records(folder, [make_record(d, 100, s, environment=env) for d in ("cpu", "cpu1") for s in (1, 2, 3)])
    for device in ("cpu", "cpu1"):
        write_calibration(folder, make_calibration(device, host))
    return folder


def meta_for(folder, host="box"):
    """The manifest a bundle of ``folder`` made on ``host`` carries."""
    from mnist_speedup.records import bundle

    return bundle.manifest(
        folder,
        bundle.bundle_files(folder),
        host=host,
        machine_id="m9",
        experiment="default",
        config={"epochs": 3},
        software={"tensorflow": "2.21.0"},
        training_code="abc",
    )


def kept_pairs(kept, folder, target: float = 0.9):
    """A kept bundle's framework pairs at ``target``, as printed: {(first, second): (speedup, low, high,
    parity)}, and its summary."""
    from mnist_speedup.analysis import aggregate, tta
    from mnist_speedup.analysis import frameworks as pairs_of
    from mnist_speedup.records import bundle

    bundle.unpack(kept, folder)
    summary, curves = aggregate.load_runs([], [folder], [])
    summary = summary.merge(tta.per_run(curves, target), on=["workload", "device", "batch_size", "seed"])
    pairs = pairs_of.pairs(summary, target, 0.005)
    printed = {
        (a, b): (f"{s:.2f}", f"{lo:.2f}", f"{hi:.2f}", p)
        for a, b, s, lo, hi, p in zip(pairs["first"], pairs.second, pairs.speedup, pairs.low, pairs.high, pairs.parity)
    }
    return printed, pairs, summary
