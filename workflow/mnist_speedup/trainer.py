"""One timed training run: one workload, device, batch size and seed.

What is timed (see README, "What is timed"):
- outside every clock: process start, imports, data loading, model build,
  placing the data on the device, tracing the compiled training function,
  a short probe of the device's matrix-multiply rate;
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

from . import calibrate, devices, energy, environment, measurements, mnist, model, numerics, tfdevice
from .run import RunSpec

EVAL_CHUNK = 1000  # samples per evaluation call
OVERHEAD_LOOP_REPEATS = 3  # compiled K-step calls timed for the host-overhead estimate
#: seconds the per-step samples and the host-overhead calls after the timed epochs may take together
AFTER_EPOCHS_BUDGET_S = 2.0


class TrainingError(RuntimeError):
    """A run that went wrong (diverged, out of memory); names the run."""


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def load_data(path, train_samples: int | None = None, input_shape=(model.N_INPUTS,)) -> dict[str, np.ndarray]:
    """The prepared MNIST, its images shaped as the workload takes them."""
    with np.load(path) as npz:
        data = {k: npz[k] for k in npz.files}
    for key in ("x_train", "x_val", "x_test"):
        data[key] = mnist.pixels(data[key]).reshape(-1, *input_shape)
    if train_samples:
        data["x_train"] = data["x_train"][:train_samples]
        data["y_train"] = data["y_train"][:train_samples]
    return data


def make_optimizer(tf, spec: RunSpec):
    """Adam as the original article ran it: TensorFlow's fused Adam kernel.

    Same update as keras.optimizers.Adam (both use the "epsilon hat" form),
    but one fused kernel per variable instead of a dozen element-wise ops:
    about 3 ms less per step at batch 500 on a 2-core CPU, which would
    otherwise be charged to the device. Keyword ``learning_rate=``, never
    ``lr=``.
    """
    return tf.compat.v1.train.AdamOptimizer(
        learning_rate=spec.learning_rate,
        beta1=spec.adam["beta_1"],
        beta2=spec.adam["beta_2"],
        epsilon=spec.adam["epsilon"],
    )


def run(spec: RunSpec, data_path, log=print) -> dict:
    """Train once and return what was measured, for ``run.make_record``."""
    started_at = _now()
    # process start, interpreter, Snakemake's script preamble, lock wait
    setup = {"before_run_s": environment.process_age_s()}
    t = time.perf_counter()
    tf, tl, device_name, physical = tfdevice.open_device(spec.device_spec)
    setup["import_s"] = time.perf_counter() - t
    if spec.deterministic:
        tf.config.experimental.enable_op_determinism()
    tf.keras.utils.set_random_seed(spec.seed)  # weights, dropout masks, shuffling

    t = time.perf_counter()
    workload = model.of(spec.workload_spec)
    data = load_data(data_path, spec.train_samples, workload.input_shape)
    setup["data_load_s"] = time.perf_counter() - t
    n_train = len(data["x_train"])
    steps = n_train // spec.batch_size  # the remainder is dropped, as tl.iterate.minibatches does
    if steps < 1:
        raise TrainingError(f"{spec.name()}: batch size larger than the {n_train} training samples")

    try:
        measured = _train(tf, tl, device_name, spec, data, steps, setup, log)
    except tf.errors.ResourceExhaustedError as exc:
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
        "environment": environment.capture(tf, tl, spec.device_spec, physical, device_name),
        "setup_s": {k: (round(v, 6) if v is not None else None) for k, v in setup.items()},
    }


def _train(tf, tl, device_name, spec: RunSpec, data, steps, setup, log) -> dict:
    with tf.device(device_name):
        training = CompiledTraining(tf, tl, device_name, spec, data, steps, setup)
        training.trace()
        probe = training.probe_device_rate()
        epochs = training.timed_epochs(log)
        test_acc, test_loss = training.evaluate(data["x_test"], data["y_test"])
        log(f"validation accuracy {epochs['val_accuracy'][-1]:.4f}, test accuracy {test_acc:.4f}")
        steps_after = training.extra_measurements()
    measured = measurements.summarise(spec, steps, epochs, (test_acc, test_loss), probe, steps_after)
    return measured | {"numerics": numerics.section(spec.device_spec, training.scaler, epochs["skipped"])}


class CompiledTraining:
    """One run's model, optimizer, data on the device and compiled
    training function, in named stages (build, trace, epochs, evaluation)."""

    def __init__(self, tf, tl, device_name, spec: RunSpec, data, steps, setup):
        self.tf, self.spec, self.data, self.steps, self.setup = tf, spec, data, steps, setup
        self.device_name = device_name
        self.per_call, self.calls = spec.calls_per_epoch(steps)
        self.workload = model.of(spec.workload_spec)
        self.precision = spec.device_spec.get("precision", "float32")
        t = time.perf_counter()
        self.net = self.workload.build(tf, tl)
        numerics.cast_layers(tf, self.net, self.precision)
        self.scaler = numerics.loss_scale(tf, self.precision)
        self.optimizer = make_optimizer(tf, spec)
        self.step_count = tf.Variable(0, dtype=tf.int64, trainable=False)  # every optimizer step, counted
        setup["build_s"] = time.perf_counter() - t
        self._place_data()
        self._compile()

    # -- data placement --------------------------------------------------
    def _place_data(self) -> None:
        """The training set on the device, once (also for the host
        pipeline: the host-overhead measurement uses it, after the timing)."""
        tf, t = self.tf, time.perf_counter()
        self.x, self.y = tf.constant(self.data["x_train"]), tf.constant(self.data["y_train"])
        if self.device_name != "/CPU:0":  # copy to the GPU now, not in the first step
            self.x, self.y = tf.identity(self.x), tf.identity(self.y)
        self.indices = tf.range(len(self.data["x_train"]))
        self.rng = np.random.default_rng(self.spec.seed)  # the host pipeline's shuffle
        tfdevice.sync(tf)
        self.setup["data_to_device_s"] = time.perf_counter() - t

    # -- the compiled training function ------------------------------------
    def _step(self, xb, yb):
        """One step: the products in the device's precision, the softmax and
        the loss in float32, the (unscaled) gradients applied to the float32
        weights unless loss scaling skips the step."""
        tf = self.tf
        with tf.GradientTape() as tape:
            logits = tf.cast(self.net(xb), tf.float32)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=logits))
            scaled = self.scaler.scale(loss)
        grads = tape.gradient(scaled, self.net.trainable_weights)
        self.scaler.apply(grads, self._apply)
        return loss

    def _apply(self, grads) -> None:
        self.optimizer.apply_gradients(zip(grads, self.net.trainable_weights))
        self.step_count.assign_add(1)

    def _compile(self) -> None:
        tf, bs = self.tf, self.spec.batch_size
        xla = bool(self.spec.device_spec.get("jit_compile", False))

        # autograph=False: the loop is written as tf.while_loop, so tracing
        # neither reads nor converts Python source (faster, and a run does
        # not depend on the source files staying as they were)
        @tf.function(
            jit_compile=xla,
            autograph=False,
            input_signature=[
                tf.TensorSpec([None, bs], tf.int32),
                tf.TensorSpec([], tf.int32),
                tf.TensorSpec([], tf.int32),
            ],
        )
        def train_calls(order, start, count):
            """``count`` steps from row ``start`` of ``order`` (batches of
            indices), gathered on the device; returns the summed loss. The
            counts are tensors, so one trace serves every call."""

            def step(i, total):
                idx = order[i]
                return i + 1, total + self._step(tf.gather(self.x, idx), tf.gather(self.y, idx))

            end = start + count
            _, total = tf.while_loop(lambda i, _total: i < end, step, (start, tf.constant(0.0, tf.float32)))
            return total

        @tf.function(
            jit_compile=xla,
            autograph=False,
            input_signature=[
                tf.TensorSpec([bs, *self.workload.input_shape], tf.float32),
                tf.TensorSpec([bs], tf.int64),
            ],
        )
        def train_batch(xb, yb):
            """One step on a batch copied from host memory (``input_pipeline: host``)."""
            return self._step(xb, yb)

        @tf.function(
            autograph=False,
            input_signature=[
                tf.TensorSpec([None, *self.workload.input_shape], tf.float32),
                tf.TensorSpec([None], tf.int64),
            ],
        )
        def eval_chunk(xb, yb):
            logits = tf.cast(self.net(xb), tf.float32)
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=logits)
            correct = tf.reduce_sum(tf.cast(tf.argmax(logits, axis=1) == yb, tf.int64))
            return tf.reduce_sum(losses), correct

        self.train_calls, self.train_batch, self.eval_chunk = train_calls, train_batch, eval_chunk

    def trace(self) -> None:
        """Trace every compiled function before the first clock. A zero-step
        call and a traced single batch create Adam's slots without changing
        a weight."""
        tf, t = self.tf, time.perf_counter()
        self.net.train()
        self.train_calls(tf.zeros([1, self.spec.batch_size], tf.int32), 0, 0)
        if self.spec.input_pipeline == "host":
            self.train_batch.get_concrete_function()
        self.net.eval()
        self.eval_chunk.get_concrete_function()
        self.net.train()
        tfdevice.sync(tf)
        self.setup["trace_s"] = time.perf_counter() - t

    def probe_device_rate(self) -> dict:
        """The device's rate at this workload's shapes at this batch size,
        just before the timed epochs: the workflow compares it across runs
        to see whether the device itself drifted."""
        t = time.perf_counter()
        dtype = numerics.compute_dtype(self.precision)
        result = calibrate.workload_rate(self.tf, self.workload, self.spec.batch_size, 3, min_seconds=0.05, dtype=dtype)
        result["at"] = _now()
        self.setup["rate_probe_s"] = time.perf_counter() - t
        return {k: result[k] for k in ("flops_per_s_median", "flops_per_s_all", "at")}

    # -- one epoch ---------------------------------------------------------
    def epoch_order(self):
        """One epoch's batches of indices, shuffled with the run's seed."""
        tf, bs, steps = self.tf, self.spec.batch_size, self.steps
        if self.spec.input_pipeline == "host":
            return self.rng.permutation(len(self.data["x_train"]))[: steps * bs].reshape(steps, bs)
        return tf.reshape(tf.random.shuffle(self.indices)[: steps * bs], [steps, bs])

    def run_epoch(self) -> float:
        """Every step of one epoch, ``per_call`` steps per call; returns the
        summed loss as a tensor (read after the clock stops)."""
        order = self.epoch_order()
        total = self.tf.constant(0.0)
        if self.spec.input_pipeline == "host":
            for idx in order:  # sliced in host memory, copied by the call
                total += self.train_batch(self.data["x_train"][idx], self.data["y_train"][idx])
            return total
        for start in range(0, self.steps, self.per_call):
            total += self.train_calls(order, start, min(self.per_call, self.steps - start))
        return total

    def timed_epochs(self, log) -> dict:
        tf, spec = self.tf, self.spec
        meter = energy.EpochEnergy(spec.device_spec)
        others = devices.of(spec.device_spec).interference_meter()
        memory = devices.of(spec.device_spec).memory_reader(tf, self.device_name)
        out = {key: [] for key in ("epoch_s", "loss", "val_accuracy", "val_loss", "eval_s", "steps", "skipped")}
        for epoch in range(1, spec.epochs + 1):
            before_steps, before_skipped = int(self.step_count.numpy()), self.scaler.skipped_steps()
            steady = epoch > spec.warmup_epochs
            tfdevice.sync(tf)
            meter.start()
            others.start()
            t0 = time.perf_counter()
            total = self.run_epoch()
            tfdevice.sync(tf)
            elapsed = time.perf_counter() - t0
            others.stop()
            meter.stop(steady)
            loss = float(total) / self.steps
            out["epoch_s"].append(elapsed)
            out["loss"].append(loss)
            out["steps"].append(int(self.step_count.numpy()) - before_steps)
            out["skipped"].append(self.scaler.skipped_steps() - before_skipped)
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
        steady_s = out["epoch_s"][spec.warmup_epochs :]
        out["energy"] = meter.summary(steady_s)
        out["memory"] = memory.peak()
        out["interference"] = others.summary()
        return out

    def check_finite(self, loss: float, epoch: int) -> None:
        """Outside the clock: a NaN can hide behind ReLU (max(NaN, 0) = 0)
        and leave a finite loss on a model whose weights are all NaN."""
        tf = self.tf
        weights_finite = all(bool(tf.reduce_all(tf.math.is_finite(w))) for w in self.net.trainable_weights)
        if not math.isfinite(loss) or not weights_finite:
            what = f"the training loss became {loss}" if not math.isfinite(loss) else "the weights became NaN/inf"
            raise TrainingError(
                f"{self.spec.name()}: {what} in epoch {epoch} (training diverged). "
                "Fix: lower learning_rate, or check the input data for NaN/inf values."
            )

    # -- evaluation ----------------------------------------------------------
    def evaluate(self, x, y) -> tuple[float, float]:
        """(accuracy, mean loss) with the model in eval mode (no dropout)."""
        self.net.eval()
        loss_sum, correct = 0.0, 0
        for i in range(0, len(x), EVAL_CHUNK):
            chunk_loss, chunk_correct = self.eval_chunk(x[i : i + EVAL_CHUNK], y[i : i + EVAL_CHUNK])
            loss_sum += float(chunk_loss)
            correct += int(chunk_correct)
        self.net.train()
        return correct / len(x), loss_sum / len(x)

    def timed_evaluation(self) -> tuple[float, float, float]:
        """Validation accuracy and loss between two synchronisations, with
        the seconds it took (recorded to show that it is not in the clock)."""
        tfdevice.sync(self.tf)
        t0 = time.perf_counter()
        acc, loss = self.evaluate(self.data["x_val"], self.data["y_val"])
        tfdevice.sync(self.tf)
        return acc, loss, time.perf_counter() - t0

    # -- after the timed epochs ------------------------------------------------
    def extra_measurements(self) -> dict:
        """Per-step jitter and the host's cost of one call, after the timed
        epochs so that they cannot bias them."""
        wanted = min(self.spec.step_samples, self.steps)
        if wanted < 2:
            return {"step_ms": [], "host_overhead": None}
        order = self.tf.reshape(self.tf.random.shuffle(self.indices)[: self.steps * self.spec.batch_size],
                                [self.steps, self.spec.batch_size])  # fmt: skip
        # bounded by time as well as by count: at a large batch size a step takes long
        single, until = [], time.perf_counter() + AFTER_EPOCHS_BUDGET_S / 2
        for i in range(wanted):
            if i >= 2 and time.perf_counter() > until:
                break
            single.append(self._synced(lambda i=i: self.train_calls(order, i, 1)))
        k = len(single)
        per_loop = max(2, min(k, int(AFTER_EPOCHS_BUDGET_S / 2 / OVERHEAD_LOOP_REPEATS / statistics.median(single))))
        loop = [self._synced(lambda: self.train_calls(order, 0, per_loop)) / per_loop
                for _ in range(OVERHEAD_LOOP_REPEATS)]  # fmt: skip
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
        tfdevice.sync(self.tf)
        t0 = time.perf_counter()
        fn()
        tfdevice.sync(self.tf)
        return time.perf_counter() - t0
