"""Every field of a run record: its type and its physical range, checked where a record enters.

One line per leaf of the record that ``record.make_record`` assembles (the spec,
``measurements.summarise``, the meters, the environment). A record that passes
these checks cannot make a later job fail: every value that summary.csv, the
figures or the report read has the type and range they assume. The test
``test_record_fields.py`` holds this table against real records (so a field
added where the record is assembled must be added here) and feeds each field
a wrong value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mnist_speedup.spec import frameworks
from mnist_speedup.spec.platforms import ACCELERATOR_FIELDS

#: an epoch of these networks on MNIST longer than a day is not a measurement
MAX_SECONDS = 86_400.0
#: no single device sustains 100 PFLOP/s (an NVIDIA H200 does about 1 PFLOP/s dense in bfloat16)
MAX_FLOPS_PER_S = 1e17
#: the longest text a record may carry, and the longest name or version (a host, a CPU or GPU, a library):
#: a 200 kB cpu_model once made a 615 kB report
MAX_TEXT, MAX_NAME = 4_000, 256
#: no machine this runs on has more cores, bytes, watts or processes than these
MAX_CORES, MAX_BYTES, MAX_WATTS, MAX_PROCESSES = 16_384, 2**50, 100_000.0, 1_000_000


#: a framework's declared environment field kinds (spec/frameworks.py FIELD_KINDS) as field kinds and ranges
_KINDS = {"text": ("text",), "flag": ("flag",), "cores": ("integer", 1, MAX_CORES), "count": ("integer", 0, 100_000)}


@dataclass(frozen=True)
class Field:
    """A leaf of the record: ``kind`` is number, integer, text, flag,
    setting (an integer or a word), or one of the first four in a list
    (``numbers``, ``integers``, ``texts``, ``flags``)."""

    dotted: str
    kind: str
    low: float | None = None
    high: float | None = None
    required: bool = False
    nullable: bool = False

    def problem(self, value, ranges: bool = True) -> str | None:
        """Why ``value`` cannot be this field (its type, and its range
        where ``ranges``), or None."""
        if value is None:
            return None if self.nullable and not self.required else "is null"
        if self.kind.endswith("s"):
            if not isinstance(value, list):
                return f"has the wrong type: {value!r} is not a list of {self.kind}"
            one = Field(self.dotted, self.kind[:-1], self.low, self.high, nullable=self.nullable)
            return next((f"holds an item that {p}" for v in value if (p := one.problem(v, ranges))), None)
        return self._scalar(value, ranges)

    def _scalar(self, value, ranges: bool) -> str | None:
        want = {"number": (int, float), "integer": int, "text": str, "flag": bool, "setting": (int, str)}[self.kind]
        if isinstance(value, bool) != (self.kind == "flag") or not isinstance(value, want):
            return f"has the wrong type: {value!r} is not {'an' if self.kind == 'integer' else 'a'} {self.kind}"
        if self.kind == "text":
            limit = int(self.high) if self.high is not None else MAX_TEXT
            if ranges and len(value) > limit:
                return f"is {len(value):,} characters long, more than the {limit:,} this field may have"
        if self.kind in ("number", "integer"):
            if not math.isfinite(value):
                return f"is {value!r}, not finite"
            too_low, too_high = self.low is not None and value < self.low, self.high is not None and value > self.high
            if ranges and (too_low or too_high):
                return f"is {value!r}, outside [{self.low:g}, {self.high:g}]"
        return None


def _f(dotted, kind, low=None, high=None, *, required=False, nullable=True):
    return Field(dotted, kind, low, high, required, nullable)


def _required(dotted, kind, low=None, high=None):
    return Field(dotted, kind, low, high, required=True, nullable=False)


FIELDS = (
    _required("schema_version", "integer", 1, 1000),
    _required("workload", "text"),
    _required("workload_spec.type", "text"),
    _required("device", "text"),
    _required("device_spec.type", "text"),
    _required("batch_size", "integer", 1, 60_000),
    _required("seed", "integer", 0, 2**32),
    _required("epochs", "integer", 1, 100_000),
    _required("warmup_epochs", "integer", 0, 100_000),
    _required("samples_per_epoch", "integer", 1, 60_000),
    _f("steps_per_epoch", "integer", 1, 60_000),
    _f("learning_rate", "number", 0, 10),
    _f("adam.beta_1", "number", 0, 1),
    _f("adam.beta_2", "number", 0, 1),
    _f("adam.epsilon", "number", 0, 1),
    _f("input_pipeline", "text"),
    _f("deterministic", "flag"),
    _f("train_samples", "integer", 1, 60_000),
    _f("steps_per_call", "setting"),
    _f("step_samples", "integer", 0, 100_000),
    _f("probe_each_run", "flag"),
    _f("device_spec.threads", "integer", 1, MAX_CORES),
    _f("device_spec.index", "integer", 0, 1024),
    _f("device_spec.precision", "text"),
    _f("device_spec.jit_compile", "flag"),
    _f("device_spec.mode", "text"),
    _f("device_spec.framework", "text"),
    _required("timing.epoch_s", "numbers", 0, MAX_SECONDS),
    _f("timing.epoch_is_warmup", "flags"),
    _required("timing.first_epoch_s", "number", 0, MAX_SECONDS),
    _required("timing.steady_epoch_mean_s", "number", 0, MAX_SECONDS),
    _f("timing.steady_epoch_std_s", "number", 0, MAX_SECONDS),
    _f("timing.steady_epoch_cv", "number", 0, 1000),
    _f("timing.clock_resolution_s", "number", 0, 1.0),
    _required("timing.samples_per_s", "number", 0, 1e12),
    _f("timing.epoch_eval_s", "numbers", 0, MAX_SECONDS),
    _f("timing.step_ms", "numbers", 0, 1000 * MAX_SECONDS),
    _f("timing.step_ms_median", "number", 0, 1000 * MAX_SECONDS),
    _f("timing.clock", "text"),
    _required("loop.steps_per_call", "integer", 1, 60_000),
    _required("loop.calls_per_epoch", "integer", 1, 60_000),
    _required("loop.optimizer_steps_per_epoch", "integers", 0, 60_000),
    _f("loop.description", "text"),
    _f("host_overhead.per_call_s", "number", -MAX_SECONDS, MAX_SECONDS),
    _f("host_overhead.one_call_step_s", "number", 0, MAX_SECONDS),
    _f("host_overhead.compiled_step_s", "number", 0, MAX_SECONDS),
    _f("host_overhead.share_of_one_call_step", "number", -1e6, 1),
    _f("host_overhead.method", "text"),
    _f("device_rate_probe.flops_per_s_median", "number", 0, MAX_FLOPS_PER_S),
    _f("device_rate_probe.flops_per_s_all", "numbers", 0, MAX_FLOPS_PER_S),
    _f("device_rate_probe.at", "text"),
    _f("memory.host_peak_rss_bytes", "integer", 0, MAX_BYTES),
    _f("memory.gpu_peak_bytes", "integer", 0, MAX_BYTES),
    _f("memory.gpu_reason", "text"),
    _f("energy.source", "text"),
    _f("energy.reason", "text"),
    _f("energy.joules_per_epoch", "number", 0, 1e9),
    _f("energy.mean_watts", "number", 0, MAX_WATTS),
    _f("energy.epoch_joules", "numbers", 0, 1e9),
    _f("interference.source", "text"),
    _f("interference.reason", "text"),
    _f("interference.gpu_reason", "text"),
    _f("interference.epoch_other_cores", "numbers", 0, MAX_CORES),
    _f("interference.epoch_other_gpu_processes", "integers", 0, MAX_PROCESSES),
    _required("flops.per_step", "integer", 1, 10**18),
    _f("flops.per_epoch", "integer", 1, 10**22),
    _required("flops.achieved_per_s", "number", 0, MAX_FLOPS_PER_S),
    _required("quality.test_accuracy", "number", 0, 1),
    _required("quality.val_accuracy", "number", 0, 1),
    _required("quality.epoch_val_accuracy", "numbers", 0, 1),
    _required("quality.final_train_loss", "number", 0, 1e6),
    _f("quality.epoch_loss", "numbers", 0, 1e6),
    _f("quality.epoch_val_loss", "numbers", 0, 1e6),
    _f("quality.test_loss", "number", 0, 1e6),
    _f("numerics.precision", "text"),
    _f("numerics.compute_dtype", "text"),
    _f("numerics.jit_compile", "flag"),
    _f("numerics.matmul_precision", "text"),
    _f("numerics.tf32", "flag"),
    _f("numerics.loss_scaling.skipped_steps", "integer", 0, 10**9),
    _f("numerics.loss_scaling.final_scale", "number", 0, 1e38),
    _f("warm_up.compiled_at_epoch_shapes", "flag"),
    _f("warm_up.untimed_steps", "integer", 0, 60_000),
    _f("warm_up.untimed_steps_kept", "flag"),
    _f("optimizer", "text"),
    _f("started_at", "text"),
    _f("finished_at", "text"),
    _f("lock_wait_s", "number", 0, 10 * MAX_SECONDS),
    *(
        _f(f"setup_s.{k}", "number", 0, MAX_SECONDS)
        for k in ("before_run_s", "import_s", "data_load_s", "build_s", "data_to_device_s", "trace_s", "rate_probe_s")
    ),
    _required("environment.hostname", "text"),
    _f("environment.logical_cores", "integer", 1, MAX_CORES),
    _f("environment.threads", "integer", 1, MAX_CORES),
    _f("environment.cpu_low_precision_flags", "texts"),
    *(
        _f(f"environment.{k}", "text", 0, MAX_NAME)
        for k in (
            "machine_id",
            "os",
            "python",
            "python_implementation",
            "numpy",
            "cpu_model",
            "framework",
            *frameworks.own_software(),
            *ACCELERATOR_FIELDS,
        )
    ),
    # each framework's own fields, as its framework.yaml declares them (cores: 0 is the framework's default)
    *(
        _f(f"environment.{k}", *_KINDS[kind])
        for fw in frameworks.declarations().values()
        for k, kind in fw.environment.items()
    ),
    _f("training_code", "text"),
    _f("data_digest", "text"),
)
#: leaves checked elsewhere (the workload spec by its network class, the seal by its digest), and the
#: environment variables recorded as they were (text or null)
BY_NAME = {f.dotted: f for f in FIELDS}
CHECKED_ELSEWHERE = ("workload_spec.", "record_sha256")
ENVIRONMENT_VARIABLES = Field("environment.env.*", "text", nullable=True)
#: every section (``energy``, ``numerics.loss_scaling``) a declared field lies in
SECTIONS = sorted(
    {f.dotted.rsplit(".", 1)[0] for f in FIELDS if "." in f.dotted}
    | {f.dotted.split(".", 1)[0] for f in FIELDS if "." in f.dotted}
)


def problems(record: dict, ranges: bool = True):
    """(dotted name, problem) for every field of ``record`` that is not
    what this workflow writes (its type; its range where ``ranges``); an
    empty iterator for a sound record."""
    found = leaves(record)
    for section in SECTIONS:
        if found.get(section) is not None:
            yield section, f"is {found[section]!r}, not a section of fields"
    for field in FIELDS:
        if field.dotted not in found:
            if field.required:
                yield field.dotted, "is missing (a required field)"
            continue
        problem = field.problem(found[field.dotted], ranges)
        if problem:
            yield field.dotted, problem
    for dotted, value in found.items():
        if dotted.startswith("environment.env.") and (problem := ENVIRONMENT_VARIABLES.problem(value)):
            yield dotted, problem
    if ranges:
        for dotted in undeclared(record):  # a field this table does not name is bounded too
            if problem := _unbounded(found[dotted]):
                yield dotted, problem


#: the most items an undeclared list may hold (a declared one is bounded by its own kind)
MAX_UNDECLARED_ITEMS = 10_000


def _unbounded(value) -> str | None:
    """Why an undeclared leaf is too large to carry (a text over MAX_TEXT, a list over MAX_UNDECLARED_ITEMS
    items or holding such a text), or None."""
    items = value if isinstance(value, list) else [value]
    if len(items) > MAX_UNDECLARED_ITEMS:
        return f"is a list of {len(items):,} items, more than the {MAX_UNDECLARED_ITEMS:,} an undeclared field may hold"
    longest = max((len(v) for v in items if isinstance(v, str)), default=0)
    if longest > MAX_TEXT:
        return f"holds a text of {longest:,} characters, more than the {MAX_TEXT:,} an undeclared field may have"
    return None


def leaves(record: dict, prefix: str = "") -> dict:
    """Every leaf of a nested record by its dotted name (lists are leaves)."""
    out = {}
    for key, value in record.items():
        if isinstance(value, dict):
            out |= leaves(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def undeclared(record: dict) -> list[str]:
    """The leaves of ``record`` this table does not declare (none, for a
    record this workflow assembled)."""
    return sorted(
        dotted
        for dotted in leaves(record)
        if dotted not in BY_NAME
        and dotted not in SECTIONS  # a section may be null (no loss scaling)
        and not dotted.startswith(CHECKED_ELSEWHERE + ("environment.env.",))
    )


def non_finite(record: dict):
    """(dotted name, value) of the first NaN or infinity anywhere in ``record``, or None."""
    for dotted, value in leaves(record).items():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, float) and not math.isfinite(v):
                return dotted, v
    return None
