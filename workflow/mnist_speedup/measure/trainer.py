"""One timed training run: one workload, device, batch size and seed.

This is the clock, written once for every framework (frameworks/ owns
everything framework-specific).

What is timed (see README, "What is timed"):
- outside every clock: process start, imports, data loading, model build,
  placing the data on the device, compiling every function at the shapes
  the epochs use (and, where the framework can undo it, one real step),
  a short probe of the device's matrix-multiply rate (unless ``probe_each_run: false``);
- each epoch clock starts after a device synchronisation and stops after
  another, so no queued GPU work escapes; it covers the shuffle and every
  training step of the epoch, run ``steps_per_call`` steps per call of one
  compiled function (and, with ``input_pipeline: host``, the per-batch
  copies from host memory);
- after each epoch, outside its clock: the validation loss and accuracy
  (model in eval mode, between two synchronisations) and the NaN checks;
- epochs ``1..warmup_epochs`` are recorded but left out of the steady state;
- the test accuracy, per-step samples and the host's share of a call come
  after the timed epochs.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
import time

import numpy as np

from mnist_speedup.data import mnist
from mnist_speedup.measure import calibrate, energy, environment, frameworks, interference, measurements
from mnist_speedup.spec import precisions, workloads
from mnist_speedup.spec.run import RunSpec

OVERHEAD_LOOP_REPEATS = 3  # compiled K-step calls timed for the host-overhead estimate
#: seconds the per-step samples and the host-overhead calls after the timed epochs may take together
AFTER_EPOCHS_BUDGET_S = 2.0


class TrainingError(RuntimeError):
    """A run that went wrong (diverged, out of memory); names the run."""


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def load_data(path, train_samples: int | None = None, input_shape=(workloads.N_INPUTS,)) -> dict[str, np.ndarray]:
    """The prepared MNIST, its images shaped as the workload takes them."""
    with np.load(path) as npz:
        data = {k: npz[k] for k in npz.files}
    for key in ("x_train", "x_val", "x_test"):
        data[key] = mnist.pixels(data[key]).reshape(-1, *input_shape)
    if train_samples:
        data["x_train"] = data["x_train"][:train_samples]
        data["y_train"] = data["y_train"][:train_samples]
    return data


def run(spec: RunSpec, data_path, log=print) -> dict:
    """Train once and return what was measured, for ``record.make_record``."""
    started_at = _now()
    # process start, interpreter, Snakemake's script preamble, lock wait
    setup = {"before_run_s": environment.process_age_s()}
    t = time.perf_counter()
    framework = frameworks.open_device(spec.device_spec, deterministic=spec.deterministic, seed=spec.seed)
    setup["import_s"] = time.perf_counter() - t

    t = time.perf_counter()
    workload = workloads.of(spec.workload_spec)
    data = load_data(data_path, spec.train_samples, workload.input_shape)
    setup["data_load_s"] = time.perf_counter() - t
    n_train = len(data["x_train"])
    steps = n_train // spec.batch_size  # the remainder is dropped, as tl.iterate.minibatches does
    if steps < 1:
        raise TrainingError(f"{spec.name()}: batch size larger than the {n_train} training samples")

    try:
        measured = _train(framework, spec, data, steps, setup, log)
    except framework.out_of_memory as exc:
        raise TrainingError(
            f"{spec.name()}: the device ran out of memory training {workload.words()} at batch size "
            f"{spec.batch_size}. Fix: use a smaller batch size or a smaller workload for this device "
            "(with --keep-going the other runs finish)."
        ) from exc
    measured["memory"]["host_peak_rss_bytes"] = environment.peak_rss_bytes()
    return measured | {
        "samples_per_epoch": steps * spec.batch_size,
        "steps_per_epoch": steps,
        "started_at": started_at,
        "finished_at": _now(),
        "environment": environment.capture(framework),
        "setup_s": {k: (round(v, 6) if v is not None else None) for k, v in setup.items()},
    }


def _train(framework, spec: RunSpec, data, steps, setup, log) -> dict:
    training = framework.training(spec, data, steps, setup)
    clock = EpochClock(framework, training, spec, steps, setup)
    warm_up = training.warm_up()
    probe = clock.probe_device_rate() if spec.probe_each_run else None  # None: the calibration's rate only
    epochs = clock.timed_epochs(log)
    test_acc, test_loss = training.evaluate(data["x_test"], data["y_test"])
    log(f"validation accuracy {epochs['val_accuracy'][-1]:.4f}, test accuracy {test_acc:.4f}")
    steps_after = clock.extra_measurements()
    measured = measurements.summarise(spec, steps, epochs, (test_acc, test_loss), probe, steps_after)
    numbers = precisions.section(spec.device_spec, training.loss_scaling(), epochs["skipped"], training.numerics())
    return measured | {"numerics": numbers, "warm_up": warm_up, "optimizer": framework.optimizer}


class EpochClock:
    """The timed epochs of one run's compiled training, the same for every
    framework: synchronise, start the meters and the clock, run the epoch,
    synchronise, stop; then the untimed evaluation and checks."""

    def __init__(self, framework, training, spec: RunSpec, steps: int, setup: dict):
        self.framework, self.training, self.spec, self.steps, self.setup = framework, training, spec, steps, setup
        self.workload = workloads.of(spec.workload_spec)

    def probe_device_rate(self) -> dict:
        """The device's rate at this workload's shapes at this batch size,
        just before the timed epochs: the workflow compares it across runs
        to see whether the device itself drifted."""
        t = time.perf_counter()
        dtype = precisions.compute_dtype(self.framework.precision)
        result = calibrate.workload_rate(
            self.framework, self.workload, self.spec.batch_size, 3, min_seconds=0.05, dtype=dtype
        )
        result["at"] = _now()
        self.setup["rate_probe_s"] = time.perf_counter() - t
        return {k: result[k] for k in ("flops_per_s_median", "flops_per_s_all", "at")}

    def timed_epochs(self, log) -> dict:
        spec, training = self.spec, self.training
        meter = energy.EpochEnergy(*energy.meter_of(spec.device_spec))
        others = interference.meter_of(spec.device_spec)
        memory = self.framework.memory_reader()
        out = {key: [] for key in ("epoch_s", "loss", "val_accuracy", "val_loss", "eval_s", "steps", "skipped")}
        for epoch in range(1, spec.epochs + 1):
            before_steps, before_skipped = training.steps_done(), training.skipped_steps()
            steady = epoch > spec.warmup_epochs
            training.sync()
            meter.start()
            others.start()
            t0 = time.perf_counter()
            total = training.run_epoch()
            training.sync()
            elapsed = time.perf_counter() - t0
            others.stop()
            meter.stop(steady)
            loss = float(total) / self.steps
            out["epoch_s"].append(elapsed)
            out["loss"].append(loss)
            out["steps"].append(training.steps_done() - before_steps)
            out["skipped"].append(training.skipped_steps() - before_skipped)
            self.check_finite(loss, epoch)
            val_acc, val_loss, eval_s = self.timed_evaluation()
            for key, value in (("val_accuracy", val_acc), ("val_loss", val_loss), ("eval_s", eval_s)):
                out[key].append(value)
            phase = "steady" if steady else "warm-up"
            log(
                f"epoch {epoch}/{spec.epochs} ({phase}): {elapsed:.3f} s, "
                f"{self.steps * spec.batch_size / elapsed:,.0f} samples/s, loss {loss:.4f}, "
                f"validation accuracy {val_acc:.4f}"
            )
        out["energy"] = meter.summary()
        out["memory"] = memory.peak()
        out["interference"] = others.summary()
        out |= {
            "loop_words": training.loop_words,
            "step_words": training.step_words,
            "loop_note": training.loop_note,
            "per_call": training.per_call,
            "calls": training.calls,
        }
        return out

    def check_finite(self, loss: float, epoch: int) -> None:
        """Outside the clock: a NaN can hide behind ReLU (max(NaN, 0) = 0)
        and leave a finite loss on a model whose weights are all NaN."""
        if not math.isfinite(loss) or not self.training.weights_finite():
            what = f"the training loss became {loss}" if not math.isfinite(loss) else "the weights became NaN/inf"
            raise TrainingError(
                f"{self.spec.name()}: {what} in epoch {epoch} (training diverged). "
                "Fix: lower learning_rate, or check the input data for NaN/inf values."
            )

    def timed_evaluation(self) -> tuple[float, float, float]:
        """Validation accuracy and loss between two synchronisations, with
        the seconds it took (recorded to show that it is not in the clock)."""
        self.training.sync()
        t0 = time.perf_counter()
        acc, loss = self.training.evaluate(self.training.data["x_val"], self.training.data["y_val"])
        self.training.sync()
        return acc, loss, time.perf_counter() - t0

    # -- after the timed epochs ------------------------------------------------
    def extra_measurements(self) -> dict:
        """Per-step jitter and the host's cost of one call, after the timed
        epochs so that they cannot bias them."""
        wanted = min(self.spec.step_samples, self.steps)
        if wanted < 2:
            return {"step_ms": [], "host_overhead": None}
        training = self.training
        order = training.shuffled_order()
        # bounded by time as well as by count: at a large batch size a step takes long
        single, until = [], time.perf_counter() + AFTER_EPOCHS_BUDGET_S / 2
        for i in range(wanted):
            if i >= 2 and time.perf_counter() > until:
                break
            single.append(self._synced(lambda i=i: training.train_calls(order, i, 1)))
        k = len(single)
        per_loop = max(2, min(k, int(AFTER_EPOCHS_BUDGET_S / 2 / OVERHEAD_LOOP_REPEATS / statistics.median(single))))
        loop = [
            self._synced(lambda: training.train_calls(order, 0, per_loop)) / per_loop
            for _ in range(OVERHEAD_LOOP_REPEATS)
        ]
        one_call, compiled = statistics.median(single), statistics.median(loop)
        return {
            "step_ms": [s * 1e3 for s in single],
            "host_overhead": {
                "per_call_s": one_call - compiled,
                "one_call_step_s": one_call,
                "compiled_step_s": compiled,
                "share_of_one_call_step": (one_call - compiled) / one_call,
                "method": (
                    f"median of {k} synchronised one-step calls minus the median per-step time of "
                    f"{OVERHEAD_LOOP_REPEATS} synchronised calls of {per_loop} steps each (same compiled function; "
                    f"at most about {AFTER_EPOCHS_BUDGET_S:g} s in all)"
                ),
            },
        }

    def _synced(self, fn) -> float:
        self.training.sync()
        t0 = time.perf_counter()
        fn()
        self.training.sync()
        return time.perf_counter() - t0
