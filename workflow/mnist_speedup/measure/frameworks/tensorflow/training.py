"""One run's compiled TensorFlow training: the network, Adam, the data on
the device and the compiled functions, driven by the trainer's clock."""

from __future__ import annotations

import time

import numpy as np

from mnist_speedup.measure.frameworks.base import Training
from mnist_speedup.measure.frameworks.tensorflow import networks
from mnist_speedup.measure.frameworks.tensorflow.numerics import cast_layers, loss_scale

OPTIMIZER = "tf.compat.v1.train.AdamOptimizer (fused ResourceApplyAdam kernel, as in the original TF1 code)"


def make_optimizer(tf, spec):
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


class TfTraining(Training):
    """Built, placed and compiled on construction (call inside ``tf.device``)."""

    loop_words = "tf.range loop"

    def __init__(self, framework, spec, data, steps, setup):
        super().__init__(framework, spec, data, steps, setup)
        tf = self.tf = framework.tf
        with self.timed("build_s"):
            self.net = networks.build(tf, framework.tl, self.workload)
            cast_layers(tf, self.net, framework.precision)
            self.scaler = loss_scale(tf, framework.precision)
            self.optimizer = make_optimizer(tf, spec)
            self.step_count = tf.Variable(0, dtype=tf.int64, trainable=False)  # every optimizer step, counted
        self._place_data()
        self._compile()

    def _place_data(self) -> None:
        """The training set on the device, once (also for the host
        pipeline: the host-overhead measurement uses it, after the timing)."""
        tf = self.tf
        with self.timed("data_to_device_s"):
            self.x, self.y = tf.constant(self.data["x_train"]), tf.constant(self.data["y_train"])
            if self.framework.physical is not None:  # copy to the GPU now, not in the first step
                self.x, self.y = tf.identity(self.x), tf.identity(self.y)
            self.indices = tf.range(len(self.data["x_train"]))
            self.rng = np.random.default_rng(self.spec.seed)  # the host pipeline's shuffle
            self.sync()

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

        self._train_calls, self.train_batch, self.eval_chunk = train_calls, train_batch, eval_chunk

    def warm_up(self) -> dict:
        """Trace (and with XLA compile) every function at the epochs' own
        shapes, [steps, batch] for the index matrix, before the first clock.
        Zero-step calls create Adam's slots and compile without changing a
        weight, so the run's first timed step is its first step."""
        tf, t = self.tf, time.perf_counter()
        self.net.train()
        self._train_calls(tf.zeros([self.steps, self.spec.batch_size], tf.int32), 0, 0)
        if self.spec.input_pipeline == "host":
            self.train_batch.get_concrete_function()
        self.net.eval()
        self.eval_chunk.get_concrete_function()
        self.net.train()
        self.sync()
        self.setup["trace_s"] = time.perf_counter() - t
        return {"compiled_at_epoch_shapes": True, "untimed_steps": 0}

    def sync(self) -> None:
        self.framework.sync()

    def shuffled_order(self):
        tf, bs = self.tf, self.spec.batch_size
        return tf.reshape(tf.random.shuffle(self.indices)[: self.steps * bs], [self.steps, bs])

    def train_calls(self, order, start, count):
        return self._train_calls(order, start, count)

    def run_epoch(self):
        """Every step of one epoch, ``per_call`` steps per call; returns the
        summed loss as a tensor (read after the clock stops)."""
        total = self.tf.constant(0.0)
        if self.spec.input_pipeline == "host":
            bs = self.spec.batch_size
            order = self.rng.permutation(len(self.data["x_train"]))[: self.steps * bs].reshape(self.steps, bs)
            for idx in order:  # sliced in host memory, copied by the call
                total += self.train_batch(self.data["x_train"][idx], self.data["y_train"][idx])
            return total
        order = self.shuffled_order()
        for start in range(0, self.steps, self.per_call):
            total += self._train_calls(order, start, min(self.per_call, self.steps - start))
        return total

    def steps_done(self) -> int:
        return int(self.step_count.numpy())

    def skipped_steps(self) -> int:
        return self.scaler.skipped_steps()

    def loss_scaling(self) -> dict | None:
        return self.scaler.summary()

    def weights_finite(self) -> bool:
        tf = self.tf
        return all(bool(tf.reduce_all(tf.math.is_finite(w))) for w in self.net.trainable_weights)

    def evaluate(self, x, y) -> tuple[float, float]:
        self.net.eval()  # TensorLayer's dropout reads the mode
        try:
            return super().evaluate(x, y)
        finally:
            self.net.train()

    def eval_sums(self, x, y):
        return self.eval_chunk(x, y)

    def numerics(self) -> dict:
        """How the products ran, beyond the precision: TF32 on or off."""
        return {"tf32": bool(self.tf.config.experimental.tensor_float_32_execution_enabled())}
