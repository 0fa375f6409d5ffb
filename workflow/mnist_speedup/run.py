"""The run: one timed training run of one workload, device, batch size and seed.

This module is the run's one owner. It defines
- the run's spec (:class:`RunSpec`): its fields are the params that rerun
  training, and the ones marked ``compared`` must be equal for two runs to
  be compared at all (like with like);
- the record's schema version and the fields a record must have;
- where a record lives (:data:`RUN_PATH`, under ``results/<experiment>/``);
- how the record is built from what the trainer measured (:func:`make_record`);
- its flat row in summary.csv (:func:`summary_row`).

The trainer measures; it does not define the record. records.py reads and
checks records against what is written here.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import seal
from .devices import LABEL_PATTERN

#: 3: runs carry their workload (runs/<workload>/<device>/...); 2 had the MLP only
SCHEMA_VERSION = 3

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
    )  # fmt: skip
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
    steps_per_call: int | str = _setting()

    @classmethod
    def settings(cls) -> list[str]:
        """The config keys a run takes."""
        return [f.name for f in dataclasses.fields(cls) if "compared" in f.metadata]

    @classmethod
    def with_defaults(cls, **fields) -> RunSpec:
        """A spec with every setting not given taken from the schema's defaults."""
        from . import schema

        return cls(**{k: schema.default(k) for k in cls.settings() if k not in fields} | fields)

    @classmethod
    def from_config(cls, config: dict, workload: str, device: str, device_spec: dict, batch_size: int, seed: int):
        """The spec of one run; the workload's spec from ``config["workloads"]``."""
        settings = {k: config[k] for k in cls.settings()}
        return cls(workload, config["workloads"][workload], device, device_spec, int(batch_size), int(seed), **settings)

    def params(self) -> dict:
        """The spec as a canonical value (keys sorted at every depth), so
        that only a changed value, never a key order, reruns a run."""
        from .configinput import canonical

        return canonical(dataclasses.asdict(self))

    def name(self) -> str:
        return f"workload {self.workload}, device {self.device}, batch size {self.batch_size}, seed {self.seed}"

    def calls_per_epoch(self, steps: int) -> tuple[int, int]:
        """(steps per call, calls per epoch) for an epoch of ``steps`` steps."""
        per_call = steps if self.steps_per_call == "epoch" else min(int(self.steps_per_call), steps)
        return per_call, math.ceil(steps / per_call)


#: what must be equal for two runs to be compared at all
#: (the workload's spec is compared among the runs of one workload)
COMPARED = tuple(f.name for f in dataclasses.fields(RunSpec) if f.metadata.get("compared")) + ("data_digest",)
#: what may differ, with a warning: part of a speedup may be the software
#: (a framework's own fields only between devices of that framework)
SOFTWARE = ("tensorflow", "tensorlayer", "keras", "jax", "jaxlib", "optax", "numpy", "python", "training_code")

#: (dotted key, accepted types) that every record must have
REQUIRED = (
    ("schema_version", int),
    ("workload", str),
    ("workload_spec.type", str),
    ("device", str),
    ("device_spec.type", str),
    ("batch_size", int),
    ("seed", int),
    ("epochs", int),
    ("warmup_epochs", int),
    ("samples_per_epoch", int),
    ("timing.epoch_s", list),
    ("timing.first_epoch_s", (int, float)),
    ("timing.steady_epoch_mean_s", (int, float)),
    ("timing.samples_per_s", (int, float)),
    ("quality.test_accuracy", (int, float)),
    ("quality.val_accuracy", (int, float)),
    ("quality.epoch_val_accuracy", list),
    ("loop.steps_per_call", int),
    ("loop.calls_per_epoch", int),
    ("loop.optimizer_steps_per_epoch", list),
    ("memory", dict),
    ("energy", dict),
    ("quality.final_train_loss", (int, float)),
    ("flops.achieved_per_s", (int, float)),
    ("environment.hostname", str),
)


def make_record(spec: RunSpec, measured: dict, *, lock_wait_s: float, training_code: str, data_digest: str) -> dict:
    """The sealed record of one run: its spec, what the trainer measured
    (``trainer.run``), and where it came from."""
    spec_fields = dataclasses.asdict(spec)
    record = {
        "schema_version": SCHEMA_VERSION,
        **spec_fields,
        "device_spec": dict(spec.device_spec),
        "workload_spec": dict(spec.workload_spec),
        **measured,
        "lock_wait_s": lock_wait_s,
        "training_code": training_code,
        "data_digest": data_digest,
    }
    return seal.seal(record)


# ------------------------------------------------------------ the row in summary.csv


def _identity(record: dict) -> dict:
    from . import devices, model

    env = record["environment"]
    return {
        "workload": record["workload"],
        "workload_spec": json.dumps(record["workload_spec"], sort_keys=True),
        "workload_words": model.words(record["workload_spec"]),
        "host": env["hostname"],
        "machine_id": env.get("machine_id"),
        "device_label": record["device"],
        **devices.columns(record["device_spec"], env),
        "cpu_model": env.get("cpu_model"),
        "batch_size": record["batch_size"],
        "seed": record["seed"],
    }


def _settings(record: dict) -> dict:
    loop = record["loop"]
    return {
        "epochs": record["epochs"],
        "warmup_epochs": record["warmup_epochs"],
        "samples_per_epoch": record["samples_per_epoch"],
        "input_pipeline": record.get("input_pipeline"),
        "deterministic": record.get("deterministic"),
        "learning_rate": record.get("learning_rate"),
        "adam": json.dumps(record.get("adam"), sort_keys=True),
        "train_samples": record.get("train_samples"),
        "steps_per_call": record.get("steps_per_call"),  # the setting: an integer or `epoch`
        "steps_per_call_effective": loop["steps_per_call"],
        "calls_per_epoch": loop["calls_per_epoch"],
        "loop": loop.get("description"),
    }


def _timing(record: dict) -> dict:
    from . import stats  # SciPy: not imported by the training process, which needs none of it

    t, loop = record["timing"], record["loop"]
    overhead = record.get("host_overhead") or {}
    per_call = overhead.get("per_call_s")
    return {
        "first_epoch_s": t["first_epoch_s"],
        "steady_epoch_mean_s": t["steady_epoch_mean_s"],
        "steady_epoch_std_s": t.get("steady_epoch_std_s"),
        "epoch_cv": stats.cv(t["epoch_s"][record["warmup_epochs"] :]),
        "samples_per_s": t["samples_per_s"],
        "step_ms_median": t.get("step_ms_median"),
        "host_overhead_per_call_s": per_call,
        "host_share_of_one_call_step": overhead.get("share_of_one_call_step"),
        "host_share_of_timed_epoch": (
            per_call * loop["calls_per_epoch"] / t["steady_epoch_mean_s"] if per_call is not None else None
        ),
    }


def _busiest_neighbour(record: dict) -> float | None:
    """The most cores other processes used in a steady epoch (None: not measured)."""
    cores = (record.get("interference") or {}).get("epoch_other_cores") or []
    steady = [c for c in cores[record["warmup_epochs"] :] if c is not None]
    return max(steady) if steady else None


def _resources(record: dict) -> dict:
    memory, energy = record["memory"], record["energy"]
    return {
        "flops_per_step": record["flops"]["per_step"],
        "achieved_flops_per_s": record["flops"]["achieved_per_s"],
        "probe_flops_per_s": (record.get("device_rate_probe") or {}).get("flops_per_s_median"),
        "host_peak_rss_bytes": memory.get("host_peak_rss_bytes"),
        "gpu_peak_bytes": memory.get("gpu_peak_bytes"),
        "energy_j_per_epoch": energy.get("joules_per_epoch"),
        "mean_watts": energy.get("mean_watts"),
        "energy_source": energy.get("source"),
        "energy_reason": energy.get("reason"),
        "other_cores_max": _busiest_neighbour(record),
        "loss_scale_skipped_steps": ((record.get("numerics") or {}).get("loss_scaling") or {}).get("skipped_steps"),
    }


def _outcome(record: dict, path, origin: str) -> dict:
    q, env = record["quality"], record["environment"]
    return {
        "final_train_loss": q["final_train_loss"],
        "val_accuracy": q["val_accuracy"],
        "test_accuracy": q["test_accuracy"],
        **{k: env.get(k) for k in SOFTWARE if k != "training_code"},
        "training_code": record.get("training_code"),
        "data_digest": record.get("data_digest"),
        "started_at": record.get("started_at"),
        "finished_at": record.get("finished_at"),
        "origin": origin,
        "path": str(path),
        "record_sha256": record.get(seal.DIGEST_FIELD),
    }


def summary_row(record: dict, path, origin: str) -> dict:
    """The run's flat row in summary.csv, in named groups of columns."""
    return _identity(record) | _settings(record) | _timing(record) | _resources(record) | _outcome(record, path, origin)
