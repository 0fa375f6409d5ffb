"""One run's PyTorch training, driven by the trainer's clock.

The data lies on the device from the start (images NCHW for a network with
convolutions); an epoch draws one permutation on the device and runs one
optimizer step per batch in a Python loop, in the device's mode: ``eager``
(as most users run it), ``fused`` (Adam's fused update), ``compiled`` (the
network through torch.compile) or ``captured`` (forward, backward and Adam as
one graph: capture.py). The epoch's summed loss stays on the device (no
``.item()`` per step) and is read after the clock.
"""

from __future__ import annotations

import copy

import numpy as np

from mnist_speedup.measure.frameworks.base import Training
from mnist_speedup.measure.frameworks.pytorch import capture, networks, numerics

#: one step of each mode, in words: (on a CPU, on a GPU)
STEP_WORDS = {
    "eager": ("eager step",) * 2,
    "fused": ("eager step with Adam's fused update",) * 2,
    "compiled": ("step through the torch.compile'd network",) * 2,
    "captured": (
        "whole step compiled by torch.compile (forward, backward and Adam)",
        "CUDA graph replay of the whole step (forward, backward and Adam)",
    ),
}


def step_words(mode: str, target) -> str:
    """One step of ``mode`` on ``target``, in words."""
    return STEP_WORDS[mode][target.type == "cuda"]


def adam_options(mode: str, target) -> dict:
    """Adam's implementation for a mode: fused, capturable (its state on the device, for a CUDA graph), or
    PyTorch's default (foreach)."""
    if mode == "fused":
        return {"fused": True}
    return {"capturable": True} if mode == "captured" and target.type == "cuda" else {}


class TorchTraining(Training):
    def __init__(self, framework, spec, data, steps, setup):
        super().__init__(framework, spec, data, steps, setup)
        torch, target = self.torch, self.target = framework.torch, framework.target
        self.mode, step = framework.mode, step_words(framework.mode, target)
        self.loop_words, self.step_words = f"Python loop, one {step} per batch", f"one {step} per call"
        if self.per_call > 1:
            self.per_call, self.calls = 1, steps
            self.loop_note = f"one step per call: PyTorch runs the epoch's loop in Python, one {step} per batch"
        with self.timed("build_s"):
            self.model = networks.build(torch, self.workload, spec.seed).to(target)
            self.optimizer = torch.optim.Adam(
                self.model.parameters(),
                lr=spec.learning_rate,
                eps=spec.adam["epsilon"],
                betas=(spec.adam["beta_1"], spec.adam["beta_2"]),
                **adam_options(self.mode, target),
            )
            self.scaler = numerics.scaler(torch, target, framework.precision)
            cache = self.mode != "captured"  # a captured graph must not keep autocast's cast weights
            self.autocast = lambda: numerics.autocast(torch, target, framework.precision, cache)
            self.train_model = torch.compile(self.model, dynamic=False) if self.mode == "compiled" else self.model
            self.captured = None  # the captured mode's step, built at the warm-up (capture.py)
        with self.timed("data_to_device_s"):
            self.x, self.y = self._on_device(data["x_train"], data["y_train"])
            self.generator = torch.Generator(device=target).manual_seed(spec.seed)
            self.rng = np.random.default_rng(spec.seed)  # the host pipeline's shuffle
            self.attempted, self.skipped = 0, torch.zeros((), dtype=torch.int64, device=target)
            self.sync()

    def _on_device(self, x, y):
        x = self.torch.from_numpy(np.ascontiguousarray(x)).to(self.target)
        if x.ndim == 4:  # NHWC images to PyTorch's NCHW
            x = x.permute(0, 3, 1, 2).contiguous()
        return x, self.torch.from_numpy(y.astype(np.int64)).to(self.target)

    def _loss(self, xb, yb):
        with self.autocast():
            logits = self.train_model(xb)
        return self.torch.nn.functional.cross_entropy(logits.float(), yb)

    def _update(self, xb, yb):
        """Forward, backward and Adam's update (what a captured graph holds); the caller zeroes the gradients."""
        loss = self._loss(xb, yb)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def _zero_grad(self):
        self.optimizer.zero_grad(set_to_none=True)

    def _step(self, xb, yb):
        """One optimizer step; float16 skips (and counts) a step whose gradients overflowed."""
        self.attempted += 1
        if self.captured is not None:
            return self.captured(xb, yb)
        if self.scaler is None:
            self._zero_grad()
            return self._update(xb, yb)
        loss = self._loss(xb, yb)
        self._zero_grad()
        self.scaler.scale(loss).backward()
        before = self.scaler._scale.clone()  # the scale halves exactly when the step is skipped
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.skipped += (self.scaler._scale < before).to(self.torch.int64)
        return loss.detach()

    def warm_up(self) -> dict:
        """Real steps at the epochs' shapes (torch.compile compiles here; the captured mode captures its
        graph), then the weights, Adam's state (zeroed in place, as a fresh Adam's: a captured graph keeps
        its tensors), the loss scale and the counters put back as they were."""
        with self.timed("trace_s"):
            weights = copy.deepcopy(self.model.state_dict())
            scale = copy.deepcopy(self.scaler.state_dict()) if self.scaler else None
            # the shuffle's and the host's random streams too, so that every mode trains on the same draws
            # (the GPU's stream is left alone: a captured graph draws its dropout masks from it)
            streams = self.generator.get_state(), self.torch.get_rng_state()
            extra = 0  # the steps a captured mode runs to build its graph
            if self.mode == "captured":
                idx = self.shuffled_order()[0]
                self.captured = capture.captured_step(
                    self.torch, self.target, self._update, self._zero_grad, self.x[idx], self.y[idx]
                )
                self.framework.graphs, extra = (self.captured.graphs, self.captured.breaks), self.captured.steps
            self.train_calls(self.shuffled_order(), 0, 1)
            self.sync()
            self.model.load_state_dict(weights)  # copied into the same tensors
            for state in self.optimizer.state.values():
                for value in state.values():
                    if isinstance(value, self.torch.Tensor):
                        value.zero_()
            if self.scaler:
                self.scaler.load_state_dict(scale)
            self.generator.set_state(streams[0])
            self.torch.set_rng_state(streams[1])
            self.attempted = 0
            self.skipped.zero_()
        if self.mode in ("compiled", "captured"):  # a recompilation inside an epoch would be timed: an error
            self.torch._dynamo.config.error_on_recompile = True
        return {"compiled_at_epoch_shapes": True, "untimed_steps": 1 + extra, "untimed_steps_kept": False}

    def sync(self) -> None:
        self.framework.sync()

    def shuffled_order(self):
        bs = self.spec.batch_size
        perm = self.torch.randperm(len(self.x), device=self.target, generator=self.generator)
        return perm[: self.steps * bs].view(self.steps, bs)

    def train_calls(self, order, start, count):
        total = self.torch.zeros((), device=self.target)
        for i in range(start, start + count):
            idx = order[i]
            total = total + self._step(self.x[idx], self.y[idx])
        return total

    def run_epoch(self):
        if self.spec.input_pipeline == "host":  # each batch sliced in host memory and copied, as the original
            bs, x, y = self.spec.batch_size, self.data["x_train"], self.data["y_train"]
            total = self.torch.zeros((), device=self.target)
            for idx in self.rng.permutation(len(x))[: self.steps * bs].reshape(self.steps, bs):
                total = total + self._step(*self._on_device(x[idx], y[idx]))
            return total
        return self.train_calls(self.shuffled_order(), 0, self.steps)

    def steps_done(self) -> int:
        return self.attempted - self.skipped_steps()

    def skipped_steps(self) -> int:
        return int(self.skipped)

    def loss_scaling(self) -> dict | None:
        if self.scaler is None:
            return None
        return {"skipped_steps": self.skipped_steps(), "final_scale": float(self.scaler.get_scale())}

    def weights_finite(self) -> bool:
        return all(bool(self.torch.isfinite(p).all()) for p in self.model.parameters())

    def eval_sums(self, x, y):
        x, y = self._on_device(x, y)
        self.model.eval()
        try:
            with self.torch.no_grad(), self.autocast():
                logits = self.model(x).float()
            loss = self.torch.nn.functional.cross_entropy(logits, y, reduction="sum")
            return loss, (logits.argmax(dim=1) == y).sum()
        finally:
            self.model.train()

    def numerics(self) -> dict:
        torch = self.torch
        return {
            "tf32": bool(torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32),
            "matmul_precision": torch.get_float32_matmul_precision(),
        }
