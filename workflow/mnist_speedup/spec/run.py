"""The run: one timed training run of one workload, device, batch size and seed.

This module is the run's one owner. It defines
- the run's spec (:class:`RunSpec`): its fields are the params that rerun
  training, and the ones marked ``compared`` must be equal for two runs to
  be compared at all (like with like);
- the record's schema version;
- where a record lives (:data:`RUN_PATH`, under ``results/<experiment>/``).

How the record is built from what the trainer measured is measure/record.py's.

Its flat row in summary.csv is summary.py's (the aggregation's, not the training's).

The trainer measures; it does not define the record. records.py reads and
checks records against what is written here.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from mnist_speedup.spec import schema
from mnist_speedup.spec.devices import LABEL_PATTERN

#: 4: raw measurements only, every derived value computed on read (records/derived.py); 3 stored them too;
#: 3: runs carry their workload (runs/<workload>/<device>/...); 2 had the MLP only
SCHEMA_VERSION = 4

#: where a run's record lives under an experiment's results folder
RUN_PATH = "runs/{workload}/{device}/bs{batch_size}/seed{seed}.json"
#: the log of a run's training job, under logs/<experiment>/
LOG_PATH = "train/" + RUN_PATH.removeprefix("runs/").removesuffix(".json") + ".log"
RUN_GLOB = RUN_PATH.format(workload="*", device="*", batch_size="*", seed="*")
RUN_REGEX = RUN_PATH.replace(".", r"\.").format(
    workload=LABEL_PATTERN, device=LABEL_PATTERN, batch_size="[1-9][0-9]{0,6}", seed="[0-9]{1,10}"
)


_PLACE = re.compile(
    r"(?:.*/)?"
    + RUN_PATH.replace(".", r"\.").format(
        workload="(?P<workload>[^/]+)",
        device="(?P<device>[^/]+)",
        batch_size="(?P<batch_size>[0-9]+)",
        seed="(?P<seed>[0-9]+)",
    )
    + r"\Z"
)


#: what a comparison is made at: one workload at one batch size (a block adds the seed)
SETTING = ["workload", "batch_size"]
#: the columns that name one run in a table
RUN_KEY = [*SETTING, "device", "seed"]


def place_of(path) -> dict[str, str] | None:
    """{workload, device, batch_size, seed} as a record's path names them (None: not in the runs/ layout)."""
    m = _PLACE.match(Path(path).as_posix())
    return m.groupdict() if m else None


def run_path(results_dir, workload: str, device: str, batch_size: int, seed: int) -> Path:
    return Path(results_dir, RUN_PATH.format(workload=workload, device=device, batch_size=batch_size, seed=seed))


def run_files(results_dir) -> list[Path]:
    """Every run record under a results folder."""
    return sorted(Path(results_dir).glob(RUN_GLOB))


def results_dir_of(record_path) -> Path:
    """The results folder a run record at ``record_path`` lies in."""
    return Path(record_path).parents[RUN_PATH.count("/")]


def _setting(compared: bool = True):
    """A field of the spec taken from the config; ``compared``: it must be
    equal between runs that are compared."""
    return field(metadata={"compared": compared})


@dataclass
class RunSpec:
    """Everything that decides one run. Defaults live in the schema only:
    build a spec from the (validated) config with :meth:`from_config`."""

    workload: str
    workload_spec: dict
    device: str
    device_spec: dict
    batch_size: int
    seed: int
    epochs: int = _setting()
    warmup_epochs: int = _setting()
    learning_rate: float = _setting()
    adam: dict = _setting()
    input_pipeline: str = _setting()
    deterministic: bool = _setting()
    train_samples: int | None = _setting()
    step_samples: int = _setting(compared=False)
    probe_each_run: bool = _setting(compared=False)
    steps_per_call: int | str = _setting()

    @classmethod
    def settings(cls) -> list[str]:
        """The config keys a run takes."""
        return [f.name for f in dataclasses.fields(cls) if "compared" in f.metadata]

    @classmethod
    def with_defaults(cls, **fields) -> RunSpec:
        """A spec with every setting not given taken from the schema's defaults."""
        return cls(**{k: schema.default(k) for k in cls.settings() if k not in fields} | fields)

    @classmethod
    def from_config(cls, config: dict, workload: str, device: str, device_spec: dict, batch_size: int, seed: int):
        """The spec of one run; the workload's spec from ``config["workloads"]``."""
        settings = {k: config[k] for k in cls.settings()}
        return cls(workload, config["workloads"][workload], device, device_spec, int(batch_size), int(seed), **settings)

    def params(self) -> dict:
        """The spec as a canonical value (keys sorted at every depth), so
        that only a changed value, never a key order, reruns a run."""
        return canonical(dataclasses.asdict(self))

    def name(self) -> str:
        return f"workload {self.workload}, device {self.device}, batch size {self.batch_size}, seed {self.seed}"

    def calls_per_epoch(self, steps: int) -> tuple[int, int]:
        """(steps per call, calls per epoch) for an epoch of ``steps`` steps."""
        per_call = steps if self.steps_per_call == "epoch" else min(int(self.steps_per_call), steps)
        return per_call, math.ceil(steps / per_call)


def training_device_spec(spec: dict) -> dict:
    """A device's spec as training sees it: without the price, which is presentation only (changing it must
    not rerun training)."""
    return {k: v for k, v in spec.items() if k != "price_per_hour"}


#: what must be equal for two runs to be compared at all
#: (the workload's spec is compared among the runs of one workload)
COMPARED = tuple(f.name for f in dataclasses.fields(RunSpec) if f.metadata.get("compared")) + ("data_digest",)


def canonical(value):
    """``value`` with the keys of every mapping sorted, at every depth: as a
    param, only a changed value reruns a job, never a key order."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value
