"""One timed training run: one device, one batch size, one seed.

What is timed (see README, "What is timed"):
- outside every clock: process start, imports, data loading, model build,
  tracing of the training step, placing the data on the device;
- each epoch clock starts after a device synchronisation and stops after
  another, so no queued GPU work escapes; it covers the shuffle and every
  training step of the epoch (and, with ``input_pipeline: host``, the
  per-batch copies from host memory);
- epochs ``1..warmup_epochs`` are recorded but left out of the steady state;
- evaluation and the per-step samples come after the timed epochs.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from . import environment, model, tfdevice

SCHEMA_VERSION = 1


class TrainingError(RuntimeError):
    """A run that went wrong (diverged, out of memory); names the run."""


@dataclass
class RunSpec:
    device: str
    device_spec: dict
    batch_size: int
    seed: int
    epochs: int
    warmup_epochs: int = 1
    learning_rate: float = 1e-4
    adam: dict = field(default_factory=lambda: {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-8})
    input_pipeline: str = "device"
    deterministic: bool = False
    train_samples: int | None = None
    step_samples: int = 50

    def name(self) -> str:
        return f"device {self.device}, batch size {self.batch_size}, seed {self.seed}"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def load_data(path, train_samples: int | None = None) -> dict[str, np.ndarray]:
    with np.load(path) as npz:
        data = {k: npz[k] for k in npz.files}
    if train_samples:
        data["x_train"] = data["x_train"][:train_samples]
        data["y_train"] = data["y_train"][:train_samples]
    return data


def steady_state(epoch_s: list[float], warmup_epochs: int) -> list[float]:
    return epoch_s[warmup_epochs:]


OPTIMIZER = "tf.compat.v1.train.AdamOptimizer (fused ResourceApplyAdam kernel, as in the original TF1 code)"


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
    """Train once and return the run record (see ``records.py``)."""
    started_at = _now()
    # process start, interpreter, Snakemake's script preamble, lock wait
    setup = {"before_run_s": environment.process_age_s()}
    t = time.perf_counter()
    tf, tl, device_name, gpu = tfdevice.open_device(spec.device_spec)
    setup["import_s"] = time.perf_counter() - t
    if spec.deterministic:
        tf.config.experimental.enable_op_determinism()
    tf.keras.utils.set_random_seed(spec.seed)  # weights, dropout masks, shuffling

    t = time.perf_counter()
    data = load_data(data_path, spec.train_samples)
    setup["data_load_s"] = time.perf_counter() - t
    n_train = len(data["x_train"])
    bs = spec.batch_size
    steps = n_train // bs  # the remainder is dropped, as tl.iterate.minibatches does
    if steps < 1:
        raise TrainingError(f"{spec.name()}: batch size larger than the {n_train} training samples")
    samples_per_epoch = steps * bs

    try:
        record = _train(tf, tl, device_name, spec, data, steps, setup, log)
    except tf.errors.ResourceExhaustedError as exc:
        raise TrainingError(
            f"{spec.name()}: the device ran out of memory at batch size {bs}. "
            "Fix: use a smaller batch size for this device."
        ) from exc

    env = environment.capture(tf, tl, spec.device_spec, gpu, device_name)

    spec_dict = asdict(spec)
    spec_dict.pop("device_spec")
    record.update(
        schema_version=SCHEMA_VERSION,
        **spec_dict,
        device_spec=dict(spec.device_spec),
        samples_per_epoch=samples_per_epoch,
        steps_per_epoch=steps,
        started_at=started_at,
        finished_at=_now(),
        environment=env,
    )
    record["setup_s"] = {k: (round(v, 6) if v is not None else None) for k, v in setup.items()}
    return record


def _train(tf, tl, device_name, spec: RunSpec, data, steps, setup, log) -> dict:
    bs = spec.batch_size
    n_train = len(data["x_train"])
    with tf.device(device_name):
        t = time.perf_counter()
        net = model.build(tf, tl)
        optimizer = make_optimizer(tf, spec)
        setup["build_s"] = time.perf_counter() - t

        @tf.function
        def train_step(xb, yb):
            with tf.GradientTape() as tape:
                logits = net(xb)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=logits))
            grads = tape.gradient(loss, net.trainable_weights)
            optimizer.apply_gradients(zip(grads, net.trainable_weights))
            return loss

        @tf.function
        def predict(xb):
            return tf.argmax(net(xb), axis=1)

        t = time.perf_counter()
        if spec.input_pipeline == "device":
            x_dev, y_dev = tf.constant(data["x_train"]), tf.constant(data["y_train"])
            if device_name != "/CPU:0":  # copy to the GPU now, not in the first step
                x_dev, y_dev = tf.identity(x_dev), tf.identity(y_dev)
            indices = tf.range(n_train)
        else:
            rng = np.random.default_rng(spec.seed)
        tfdevice.sync(tf)
        setup["data_to_device_s"] = time.perf_counter() - t

        def epoch_batches():
            """Yield one epoch's (x, y) batches, shuffled with the run's seed."""
            if spec.input_pipeline == "device":
                order = tf.reshape(tf.random.shuffle(indices)[: steps * bs], [steps, bs])
                for i in range(steps):
                    yield tf.gather(x_dev, order[i]), tf.gather(y_dev, order[i])
            else:
                order = rng.permutation(n_train)[: steps * bs].reshape(steps, bs)
                for idx in order:
                    yield data["x_train"][idx], data["y_train"][idx]

        t = time.perf_counter()
        net.train()
        train_step.get_concrete_function(
            tf.TensorSpec([bs, model.LAYERS[0][0]], tf.float32), tf.TensorSpec([bs], tf.int64)
        )
        setup["trace_s"] = time.perf_counter() - t

        epoch_s, epoch_loss = [], []
        for epoch in range(1, spec.epochs + 1):
            losses = []
            tfdevice.sync(tf)
            t0 = time.perf_counter()
            for xb, yb in epoch_batches():
                losses.append(train_step(xb, yb))
            tfdevice.sync(tf)
            elapsed = time.perf_counter() - t0
            loss = float(tf.reduce_mean(tf.stack(losses)))
            epoch_s.append(elapsed)
            epoch_loss.append(loss)
            phase = "warm-up" if epoch <= spec.warmup_epochs else "steady"
            log(
                f"epoch {epoch}/{spec.epochs} ({phase}): {elapsed:.3f} s, "
                f"{steps * bs / elapsed:,.0f} samples/s, loss {loss:.4f}"
            )
            # outside the clock: a NaN can hide behind ReLU (max(NaN, 0) = 0) and
            # leave a finite loss on a model whose weights are all NaN
            weights_finite = all(bool(tf.reduce_all(tf.math.is_finite(w))) for w in net.trainable_weights)
            if not math.isfinite(loss) or not weights_finite:
                what = f"the training loss became {loss}" if not math.isfinite(loss) else "the weights became NaN/inf"
                raise TrainingError(
                    f"{spec.name()}: {what} in epoch {epoch} (training diverged). "
                    "Fix: lower learning_rate, or check the input data for NaN/inf values."
                )

        net.eval()

        def accuracy(x, y):
            correct = 0
            for i in range(0, len(x), 1000):
                correct += int(tf.reduce_sum(tf.cast(predict(x[i : i + 1000]) == y[i : i + 1000], tf.int32)))
            return correct / len(x)

        val_acc = accuracy(data["x_val"], data["y_val"])
        test_acc = accuracy(data["x_test"], data["y_test"])
        log(f"validation accuracy {val_acc:.4f}, test accuracy {test_acc:.4f}")

        # Per-step jitter, after the timed epochs so it cannot bias them:
        # every step synchronised like the epoch clock.
        net.train()
        step_ms = []
        batches = epoch_batches()
        for _ in range(min(spec.step_samples, steps)):
            xb, yb = next(batches)
            tfdevice.sync(tf)
            t0 = time.perf_counter()
            train_step(xb, yb)
            tfdevice.sync(tf)
            step_ms.append((time.perf_counter() - t0) * 1e3)

    steady = steady_state(epoch_s, spec.warmup_epochs)
    mean = statistics.fmean(steady)
    std = statistics.stdev(steady) if len(steady) > 1 else None
    flops_step = model.training_step_flops(bs)
    return {
        "timing": {
            "clock": "time.perf_counter, device synchronised before each read",
            "epoch_s": epoch_s,
            "epoch_is_warmup": [i < spec.warmup_epochs for i in range(spec.epochs)],
            "first_epoch_s": epoch_s[0],
            "steady_epoch_mean_s": mean,
            "steady_epoch_std_s": std,
            "steady_epoch_cv": (std / mean) if std is not None else None,
            "samples_per_s": steps * bs / mean,
            "step_ms": step_ms,
            "step_ms_median": statistics.median(step_ms) if step_ms else None,
        },
        "optimizer": OPTIMIZER,
        "flops": {
            "per_step": flops_step,
            "per_epoch": flops_step * steps,
            "achieved_per_s": flops_step * steps / mean,
        },
        "quality": {
            "epoch_loss": epoch_loss,
            "final_train_loss": epoch_loss[-1],
            "val_accuracy": val_acc,
            "test_accuracy": test_acc,
        },
    }
