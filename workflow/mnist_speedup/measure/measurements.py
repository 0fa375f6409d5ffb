"""What one run measured, summarised into the record's sections.

The trainer hands over raw measurements (epoch clocks, per-epoch
accuracies, the after-epoch samples); this turns them into the record's
``timing``, ``loop``, ``flops`` and ``quality`` sections. The record
itself (spec, provenance, seal) is built in ``record.make_record``.
"""

from __future__ import annotations

import statistics
import time

from mnist_speedup.spec import workloads


def _timing(spec, steps: int, epochs: dict, step_ms: list[float]) -> dict:
    steady = epochs["epoch_s"][spec.warmup_epochs :]
    mean = statistics.fmean(steady)
    std = statistics.stdev(steady) if len(steady) > 1 else None
    return {
        "clock": "time.perf_counter, device synchronised before each read",
        # what the clock can tell apart: times closer than this are the same time
        "clock_resolution_s": time.get_clock_info("perf_counter").resolution,
        "epoch_s": epochs["epoch_s"],
        "epoch_is_warmup": [i < spec.warmup_epochs for i in range(spec.epochs)],
        "first_epoch_s": epochs["epoch_s"][0],
        "steady_epoch_mean_s": mean,
        "steady_epoch_std_s": std,
        "steady_epoch_cv": (std / mean) if std is not None else None,
        "samples_per_s": steps * spec.batch_size / mean,
        "epoch_eval_s": epochs["eval_s"],
        "step_ms": step_ms,
        "step_ms_median": statistics.median(step_ms) if step_ms else None,
    }


def _loop(spec, steps: int, epochs: dict) -> dict:
    per_call, calls = epochs["per_call"], epochs["calls"]
    note = f"; {epochs['loop_note']}" if epochs.get("loop_note") else ""
    return {
        "steps_per_call": per_call,
        "calls_per_epoch": calls,
        "optimizer_steps_per_epoch": epochs["steps"],
        "description": loop_description(spec.input_pipeline, per_call, calls, epochs["loop_words"]) + note,
    }


def _quality(epochs: dict, test: tuple[float, float]) -> dict:
    return {
        "epoch_loss": epochs["loss"],
        "epoch_val_accuracy": epochs["val_accuracy"],
        "epoch_val_loss": epochs["val_loss"],
        "final_train_loss": epochs["loss"][-1],
        "val_accuracy": epochs["val_accuracy"][-1],
        "test_accuracy": test[0],
        "test_loss": test[1],
    }


def summarise(spec, steps: int, epochs: dict, test: tuple[float, float], probe: dict | None, after: dict) -> dict:
    """The measured sections of a record. ``test`` is (accuracy, loss);
    ``after`` holds the per-step samples and the host overhead."""
    timing = _timing(spec, steps, epochs, after["step_ms"])
    flops_step = workloads.of(spec.workload_spec).training_step_flops(spec.batch_size)
    return {
        "timing": timing,
        "loop": _loop(spec, steps, epochs),
        "host_overhead": after["host_overhead"],
        "device_rate_probe": probe,
        "memory": epochs["memory"],
        "energy": epochs["energy"],
        "interference": epochs["interference"],
        "flops": {
            "per_step": flops_step,
            "per_epoch": flops_step * steps,
            "achieved_per_s": flops_step * steps / timing["steady_epoch_mean_s"],
        },
        "quality": _quality(epochs, test),
    }


def loop_description(input_pipeline: str, per_call: int, calls: int, loop_words: str = "tf.range loop") -> str:
    """The timed loop in words; ``loop_words``: the framework's compiled loop."""
    if input_pipeline == "host":
        return "one compiled call per step, each batch sliced in host memory and copied (as the original)"
    if calls == 1:
        return f"the whole epoch in one compiled call ({loop_words}, batches gathered on the device)"
    steps = f"{per_call} step{'s' if per_call != 1 else ''}"
    return f"{steps} per call ({loop_words}), {calls} calls per epoch (batches gathered on the device)"
