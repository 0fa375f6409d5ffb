"""The seam between the framework-independent measurement and one framework.

A :class:`Framework` is opened on one device (its constructor imports the
framework with the process environment the device needs, and picks the
device). It hands out a :class:`Training` (one run's network, optimizer,
data on the device and compiled functions) and runs the calibration's
products. The trainer's clock calls only what is declared here.
"""

from __future__ import annotations

import os
import time

from mnist_speedup.spec import devices, frameworks, precisions, workloads


class DeviceError(RuntimeError):
    """The requested device is not available; never fall back silently."""


class Framework:
    """One framework opened on one device. Subclasses set the class
    attributes and implement the methods that raise NotImplementedError."""

    #: the name a device spec gives in ``framework`` (its folder's framework.yaml declares the rest)
    name = ""
    #: what trains the network and updates its weights, for the record
    optimizer = ""
    #: the exceptions by which the framework says the device ran out of memory
    out_of_memory: tuple[type[BaseException], ...] = ()
    #: the (framework, platform) table's row: how this framework opens each platform it runs on, as the name
    #: of its method (platform name -> method; the platforms are those its framework.yaml has environments for)
    opens: dict[str, str] = {}

    def __init__(self, device_spec: dict, *, deterministic: bool = False, seed: int | None = None):
        self.device_spec, self.device = device_spec, devices.of(device_spec)
        self.declaration = frameworks.declarations()[self.name]
        self.deterministic, self.seed = deterministic, seed
        self.precision = precisions.name_of(device_spec)
        os.environ.update(self.device.process_environment())

    def open_platform(self, *args):
        """Open the device's platform by this framework's row of the table (``opens``)."""
        platform = self.device.platform
        method = self.opens.get(platform.name)
        if method is None:
            raise DeviceError(
                f"{self.declaration.words} cannot open a {platform.words} device here. Fix: use a framework that "
                f"runs on {platform.words}, or add its opening to frameworks/{self.name}/backend.py (``opens``) "
                "and an environment for it to its framework.yaml"
            )
        return getattr(self, method)(*args)

    # -- what every framework provides ------------------------------------
    def training(self, spec, data: dict, steps: int, setup: dict) -> Training:
        raise NotImplementedError

    def product_rate_function(self, products, dtype: str):
        """``(run, sync)``: ``run()`` computes every product once on
        operands made once; ``sync(result)`` waits until it is done."""
        raise NotImplementedError

    def square_rate_function(self, n: int, dtype: str):
        raise NotImplementedError

    def memory_reader(self):
        """What reads the device's peak memory over the timed epochs."""
        return NoDeviceMemory()

    def environment(self) -> dict:
        """The framework's versions and the accelerator it sees, for the record."""
        raise NotImplementedError


#: samples per evaluation call
EVAL_CHUNK = 1000


class Training:
    """One run's compiled training, as the trainer's clock drives it. The
    opening is shared: a subclass's ``__init__`` calls this one, then builds
    its network inside :meth:`timed` ``("build_s")``."""

    #: the steps each call runs, and the calls of an epoch
    per_call: int
    calls: int
    #: the compiled loop of an epoch in words, for the record's loop description
    loop_words = ""
    #: one call of the host input pipeline's loop (one batch copied from host memory), in words
    step_words = "one compiled call per step"
    #: why the loop differs from what the config asked for ("" where it does not)
    loop_note = ""

    def __init__(self, framework, spec, data: dict, steps: int, setup: dict):
        self.framework, self.spec, self.data, self.steps, self.setup = framework, spec, data, steps, setup
        self.per_call, self.calls = spec.calls_per_epoch(steps)
        self.workload = workloads.of(spec.workload_spec)

    def timed(self, part: str):
        """A context that adds its seconds to ``setup[part]`` (outside every epoch's clock)."""
        return _Stopwatch(self.setup, part)

    def warm_up(self) -> dict:
        """Compile every function at the shapes the epochs use and run each
        once, untimed, leaving the weights and the optimizer's state as they
        were. Returns what the record says of it."""
        raise NotImplementedError

    def sync(self) -> None:
        """Wait for every queued device computation of this run."""
        raise NotImplementedError

    def run_epoch(self):
        """Every step of one epoch; returns the summed loss (read with float() after the clock)."""
        raise NotImplementedError

    def shuffled_order(self):
        """One epoch's batches of indices, on the device."""
        raise NotImplementedError

    def train_calls(self, order, start: int, count: int):
        """``count`` steps from row ``start`` of ``order`` in one compiled call."""
        raise NotImplementedError

    def steps_done(self) -> int:
        raise NotImplementedError

    def skipped_steps(self) -> int:
        raise NotImplementedError

    def loss_scaling(self) -> dict | None:
        """The loss scaling's summary (None: the precision needs none)."""
        raise NotImplementedError

    def weights_finite(self) -> bool:
        raise NotImplementedError

    def evaluate(self, x, y) -> tuple[float, float]:
        """(accuracy, mean loss) in eval mode (no dropout), in chunks of EVAL_CHUNK."""
        loss_sum, correct = 0.0, 0
        for i in range(0, len(x), EVAL_CHUNK):
            chunk_loss, chunk_correct = self.eval_sums(x[i : i + EVAL_CHUNK], y[i : i + EVAL_CHUNK])
            loss_sum += float(chunk_loss)
            correct += int(chunk_correct)
        return correct / len(x), loss_sum / len(x)

    def eval_sums(self, x, y):
        """(summed loss, correct predictions) of one chunk, in one compiled call."""
        raise NotImplementedError

    def numerics(self) -> dict:
        """How the products ran beyond the precision, for the record's numerics."""
        return {}


class NoDeviceMemory:
    """The memory reader of a device without its own memory (a CPU run)."""

    def peak(self) -> dict:
        return {"gpu_peak_bytes": None, "gpu_reason": "not a GPU run"}


class _Stopwatch:
    def __init__(self, setup: dict, part: str):
        self.setup, self.part = setup, part

    def __enter__(self):
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        self.setup[self.part] = self.setup.get(self.part, 0.0) + time.perf_counter() - self.start
