"""What a run record derives from its raw measurements, computed when the record is read, never stored.

As pyperf keeps a run's raw values and derives its statistics on read, a
record (schema version 4) holds the raw measurements: the epoch clocks,
the per-step samples, the per-epoch accuracies, losses and joules, the
optimizer steps. Everything below is computed from them by :func:`derive`,
each time a record is read (records/run_record.py), so no stored copy can
disagree with its source and nothing needs re-checking. Version 3 records
stored these values too: the reader checks them against their source
(records/invariants.py) once, then drops them for the computed ones
(:func:`strip`), so both versions read the same.
"""

from __future__ import annotations

import math
import statistics

from mnist_speedup.spec import workloads

#: every value derived on read, by section
DERIVED = {
    "timing": (
        "first_epoch_s",
        "steady_epoch_mean_s",
        "steady_epoch_std_s",
        "steady_epoch_cv",
        "samples_per_s",
        "epoch_is_warmup",
        "step_ms_median",
    ),
    "flops": ("per_step", "per_epoch", "achieved_per_s"),
    "quality": ("final_train_loss", "val_accuracy"),
    "energy": ("joules_per_epoch", "mean_watts"),
}


#: the same, as dotted names (``timing.steady_epoch_mean_s``)
NAMES = tuple(f"{section}.{key}" for section, keys in DERIVED.items() for key in keys)


def stored(record: dict) -> list[str]:
    """The derived values a record stores (none in version 4), as dotted names."""
    return [
        name
        for name in NAMES
        if isinstance(record.get(name.split(".")[0]), dict) and name.split(".")[1] in record[name.split(".")[0]]
    ]


def strip(record: dict) -> dict:
    """``record`` without its derived values (a new dict; the sections are copied)."""
    out = dict(record)
    for section, keys in DERIVED.items():
        if isinstance(out.get(section), dict):
            out[section] = {k: v for k, v in out[section].items() if k not in keys}
    return out


def _timing(record: dict) -> dict:
    t, warmup = record["timing"], record["warmup_epochs"]
    epoch_s = t["epoch_s"]
    steady = epoch_s[warmup:]
    mean = math.fsum(steady) / len(steady)
    sd = statistics.stdev(steady) if len(steady) > 1 else None
    step_ms = t.get("step_ms")
    return {
        "first_epoch_s": epoch_s[0],
        "steady_epoch_mean_s": mean,
        "steady_epoch_std_s": sd,
        "steady_epoch_cv": sd / mean if sd is not None else None,
        "samples_per_s": record["samples_per_epoch"] / mean,
        "epoch_is_warmup": [i < warmup for i in range(record["epochs"])],
        "step_ms_median": statistics.median(step_ms) if step_ms else None,
    }


def _energy(record: dict, steady_s: float) -> dict:
    joules = (record.get("energy") or {}).get("epoch_joules")
    if not joules:
        return {"joules_per_epoch": None, "mean_watts": None}
    return {"joules_per_epoch": math.fsum(joules) / len(joules), "mean_watts": math.fsum(joules) / steady_s}


def _quality(q: dict) -> dict:
    """The final training loss and validation accuracy: the last epoch's."""
    last = {"final_train_loss": q.get("epoch_loss"), "val_accuracy": q.get("epoch_val_accuracy")}
    return q | {key: values[-1] for key, values in last.items() if values}


def derive(raw: dict) -> dict:
    """``raw`` (a record without derived values) with every derived value computed (a new dict)."""
    out = strip(raw)
    timing = _timing(out)
    per_step = workloads.of(out["workload_spec"]).training_step_flops(out["batch_size"])
    per_epoch = per_step * out["steps_per_epoch"]
    flops = {"per_step": per_step, "per_epoch": per_epoch, "achieved_per_s": per_epoch / timing["steady_epoch_mean_s"]}
    out |= {"timing": out["timing"] | timing, "flops": (out.get("flops") or {}) | flops}
    out["quality"] = _quality(out["quality"])
    if isinstance(out.get("energy"), dict):
        steady_s = math.fsum(out["timing"]["epoch_s"][out["warmup_epochs"] :])
        out["energy"] = out["energy"] | _energy(out, steady_s)
    return out
