"""One run's compiled JAX training, driven by the trainer's clock."""

from __future__ import annotations

import time

import numpy as np

from mnist_speedup.measure.frameworks.base import EVAL_CHUNK, Training
from mnist_speedup.measure.frameworks.jax import networks
from mnist_speedup.spec import precisions

#: why a JAX CPU device runs a network with convolutions one step per call
CPU_CONV_NOTE = (
    "one step per call: XLA's CPU backend runs convolution gradients 10 to 45 times slower inside a compiled "
    "loop than outside one (measured with JAX 0.10.2), so the epoch's loop stays on the host"
)


class JaxTraining(Training):
    loop_words = "lax.fori_loop"

    def __init__(self, framework, spec, data, steps, setup):
        super().__init__(framework, spec, data, steps, setup)
        jax = self.jax = framework.jax
        # the epoch's loop on the host, one compiled step per call
        self.host_loop = not framework.device.platform.accelerator and self.workload.has_convolutions()
        if self.host_loop and self.per_call > 1:
            self.per_call, self.calls = 1, steps
            self.loop_note = CPU_CONV_NOTE
        self.dtype = precisions.compute_dtype(framework.precision)
        with self.timed("build_s"):
            self.shuffle_key, dropout_key = jax.random.split(jax.random.PRNGKey(spec.seed))
            params = networks.init_params(jax, self.workload, spec.seed)
            optimizer = networks.tf_adam(
                jax, spec.learning_rate, spec.adam["beta_1"], spec.adam["beta_2"], spec.adam["epsilon"]
            )
            self.state = framework.put(
                {
                    "params": params,
                    "opt": optimizer.init(params),
                    "key": dropout_key,
                    "scaling": networks.initial_scaling(jax, framework.precision),
                    "steps": jax.numpy.int32(0),
                }
            )
            self._step = networks.make_step(jax, self.workload, optimizer, framework.precision)
        with self.timed("data_to_device_s"):
            self.x, self.y = framework.put(data["x_train"]), framework.put(data["y_train"].astype(np.int32))
            self.rng = np.random.default_rng(spec.seed)  # the host pipeline's shuffle
            self.sync()
        self._compile()

    def _compile(self) -> None:
        jax, step = self.jax, self._step

        def train_calls(state, x, y, order, start, count):
            def body(i, carry):
                state, total = carry
                idx = order[i]
                state, loss = step(state, x[idx], y[idx])
                return state, total + loss

            return jax.lax.fori_loop(start, start + count, body, (state, jax.numpy.float32(0.0)))

        workload, dtype = self.workload, self.dtype
        self._calls = jax.jit(train_calls)
        self._one = jax.jit(lambda state, x, y, order, i: step(state, x[order[i]], y[order[i]]))
        self._batch = jax.jit(step)
        self._eval = jax.jit(lambda params, x, y: networks.eval_chunk(jax, workload, params, x, y, dtype))
        n = self.x.shape[0]
        self._shuffle = jax.jit(lambda key: jax.random.permutation(key, n))

    # -- the warm-up: compile at the epochs' shapes, run once, keep the state
    def warm_up(self) -> dict:
        t = time.perf_counter()
        order = self.shuffled_order()
        if self.host_loop:
            discarded, _ = self._one(self.state, self.x, self.y, order, np.int32(0))
        else:
            discarded, _ = self._calls(self.state, self.x, self.y, order, np.int32(0), np.int32(1))
        if self.spec.input_pipeline == "host":
            idx = np.arange(self.spec.batch_size)
            discarded = self._batch(self.state, self.data["x_train"][idx], self.data["y_train"][idx].astype(np.int32))
        self.jax.block_until_ready(discarded)
        for part in ("val", "test"):  # every chunk length the evaluations will see compiles here
            x, y = self.data[f"x_{part}"], self.data[f"y_{part}"]
            for length in {min(len(x), EVAL_CHUNK), len(x) % EVAL_CHUNK} - {0}:
                self.evaluate(x[:length], y[:length])
        self.sync()
        self.setup["trace_s"] = time.perf_counter() - t
        return {"compiled_at_epoch_shapes": True, "untimed_steps": 1, "untimed_steps_kept": False}

    def sync(self) -> None:
        self.jax.block_until_ready(self.state)

    def shuffled_order(self):
        self.shuffle_key, sub = self.jax.random.split(self.shuffle_key)
        bs = self.spec.batch_size
        return self._shuffle(sub)[: self.steps * bs].reshape(self.steps, bs)

    def train_calls(self, order, start, count):
        if self.host_loop:  # count calls of one step each
            total = 0.0
            for i in range(start, start + count):
                self.state, loss = self._one(self.state, self.x, self.y, order, np.int32(i))
                total = total + loss
            return total
        self.state, total = self._calls(self.state, self.x, self.y, order, np.int32(start), np.int32(count))
        return total

    def run_epoch(self):
        total = 0.0
        if self.spec.input_pipeline == "host":
            bs = self.spec.batch_size
            order = self.rng.permutation(len(self.data["x_train"]))[: self.steps * bs].reshape(self.steps, bs)
            for idx in order:  # sliced in host memory, copied by the call
                self.state, loss = self._batch(
                    self.state, self.data["x_train"][idx], self.data["y_train"][idx].astype(np.int32)
                )
                total = total + loss
            return total
        order = self.shuffled_order()
        for start in range(0, self.steps, self.per_call):
            total = total + self.train_calls(order, start, min(self.per_call, self.steps - start))
        return total

    def steps_done(self) -> int:
        return int(self.state["steps"])

    def skipped_steps(self) -> int:
        return int(self.state["scaling"]["skipped"])

    def loss_scaling(self) -> dict | None:
        if not precisions.scales_loss(self.framework.precision):
            return None
        return {"skipped_steps": self.skipped_steps(), "final_scale": float(self.state["scaling"]["scale"])}

    def weights_finite(self) -> bool:
        jnp = self.jax.numpy
        return all(bool(jnp.all(jnp.isfinite(w))) for w in self.jax.tree_util.tree_leaves(self.state["params"]))

    def eval_sums(self, x, y):
        return self._eval(self.state["params"], x, y.astype(np.int32))

    def numerics(self) -> dict:
        return {"matmul_precision": self.framework.matmul_precision}
