"""One run's PyTorch training, driven by the trainer's clock.

The data lies on the device from the start (images NCHW for a network with
convolutions); an epoch draws one permutation on the device and runs one
optimizer step per batch in a Python loop, eager or through the torch.compile'd
network. The epoch's summed loss stays on the device (no ``.item()`` per step)
and is read after the clock.
"""

from __future__ import annotations

import copy

import numpy as np

from mnist_speedup.measure.frameworks.base import Training
from mnist_speedup.measure.frameworks.pytorch import networks, numerics

#: why a PyTorch epoch is one step per call whatever steps_per_call says
LOOP_NOTE = "one step per call: PyTorch runs the epoch's loop in Python, one eager (or torch.compile'd) step per batch"


class TorchTraining(Training):
    def __init__(self, framework, spec, data, steps, setup):
        super().__init__(framework, spec, data, steps, setup)
        torch, target = self.torch, self.target = framework.torch, framework.target
        self.loop_words = "Python loop of torch.compile'd steps" if framework.compile else "Python loop of eager steps"
        if self.per_call > 1:
            self.per_call, self.calls, self.loop_note = 1, steps, LOOP_NOTE
        with self.timed("build_s"):
            self.model = networks.build(torch, self.workload, spec.seed).to(target)
            self.optimizer = torch.optim.Adam(
                self.model.parameters(),
                lr=spec.learning_rate,
                eps=spec.adam["epsilon"],
                betas=(spec.adam["beta_1"], spec.adam["beta_2"]),
            )
            self.scaler = numerics.scaler(torch, target, framework.precision)
            self.autocast = lambda: numerics.autocast(torch, target, framework.precision)
            self.train_model = torch.compile(self.model, dynamic=False) if framework.compile else self.model
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

    def _step(self, xb, yb):
        """One optimizer step; float16 skips (and counts) a step whose gradients overflowed."""
        with self.autocast():
            logits = self.train_model(xb)
        loss = self.torch.nn.functional.cross_entropy(logits.float(), yb)
        self.optimizer.zero_grad(set_to_none=True)
        self.attempted += 1
        if self.scaler is None:
            loss.backward()
            self.optimizer.step()
            return loss.detach()
        self.scaler.scale(loss).backward()
        before = self.scaler._scale.clone()  # the scale halves exactly when the step is skipped
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.skipped += (self.scaler._scale < before).to(self.torch.int64)
        return loss.detach()

    def warm_up(self) -> dict:
        """One real step at the epochs' shapes (torch.compile compiles here), then the weights, Adam's
        state, the loss scale and the counters put back as they were."""
        with self.timed("trace_s"):
            saved = [copy.deepcopy(o.state_dict()) for o in (self.model, self.optimizer)]
            scale = copy.deepcopy(self.scaler.state_dict()) if self.scaler else None
            self.train_calls(self.shuffled_order(), 0, 1)
            self.sync()
            self.model.load_state_dict(saved[0])
            self.optimizer.load_state_dict(saved[1])
            if self.scaler:
                self.scaler.load_state_dict(scale)
            self.attempted = 0
            self.skipped.zero_()
        if self.framework.compile:  # a recompilation inside an epoch would be timed: make it an error
            self.torch._dynamo.config.error_on_recompile = True
        return {"compiled_at_epoch_shapes": True, "untimed_steps": 1, "untimed_steps_kept": False}

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
