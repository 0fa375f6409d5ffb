"""What one run measured, summarised into the record's sections.

The trainer hands over raw measurements (epoch clocks, per-epoch
accuracies, the after-epoch samples); this puts them into the record's
``timing``, ``loop`` and ``quality`` sections, raw: what is derived from
them (the steady mean and SD, throughput, FLOPs per epoch and per second,
the final accuracy and loss, energy per epoch) is computed when the record
is read (records/derived.py). The record
itself (spec, provenance, seal) is built in ``record.make_record``.
"""

from __future__ import annotations

import time


def _timing(epochs: dict, step_ms: list[float]) -> dict:
    """The raw clocks: the steady mean, SD, CV, throughput and the median step are derived on read."""
    return {
        "clock": "time.perf_counter, device synchronised before each read",
        # what the clock can tell apart: times closer than this are the same time
        "clock_resolution_s": time.get_clock_info("perf_counter").resolution,
        "epoch_s": epochs["epoch_s"],
        "epoch_eval_s": epochs["eval_s"],
        "step_ms": step_ms,
    }


def _loop(spec, steps: int, epochs: dict) -> dict:
    per_call, calls = epochs["per_call"], epochs["calls"]
    note = f"; {epochs['loop_note']}" if epochs.get("loop_note") else ""
    return {
        "steps_per_call": per_call,
        "calls_per_epoch": calls,
        "optimizer_steps_per_epoch": epochs["steps"],
        "description": loop_description(
            spec.input_pipeline, per_call, calls, epochs["loop_words"], epochs["step_words"]
        )
        + note,
    }


def _quality(epochs: dict, test: tuple[float, float]) -> dict:
    return {
        "epoch_loss": epochs["loss"],
        "epoch_val_accuracy": epochs["val_accuracy"],
        "epoch_val_loss": epochs["val_loss"],
        "test_accuracy": test[0],
        "test_loss": test[1],
    }


def summarise(spec, steps: int, epochs: dict, test: tuple[float, float], probe: dict | None, after: dict) -> dict:
    """The measured sections of a record, raw values only (records/derived.py derives the rest when the
    record is read). ``test`` is (accuracy, loss); ``after`` holds the per-step samples and the host overhead."""
    return {
        "timing": _timing(epochs, after["step_ms"]),
        "loop": _loop(spec, steps, epochs),
        "host_overhead": after["host_overhead"],
        "device_rate_probe": probe,
        "memory": epochs["memory"],
        "energy": epochs["energy"],
        "interference": epochs["interference"],
        "quality": _quality(epochs, test),
    }


def loop_description(
    input_pipeline: str,
    per_call: int,
    calls: int,
    loop_words: str = "tf.range loop",
    step_words: str = "one compiled call per step",
) -> str:
    """The timed loop in words; ``loop_words``: the framework's loop; ``step_words``: one call of it."""
    if input_pipeline == "host":
        return f"{step_words}, each batch sliced in host memory and copied (as the original)"
    if calls == 1:
        return f"the whole epoch in one compiled call ({loop_words}, batches gathered on the device)"
    steps = f"{per_call} step{'s' if per_call != 1 else ''}"
    return f"{steps} per call ({loop_words}), {calls} calls per epoch (batches gathered on the device)"
