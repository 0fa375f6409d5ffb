"""A record as a whole: what one field says must agree with what the others say.

Raw measurements are the truth, as pyperf keeps values and derives its
statistics: the epoch clocks, the per-epoch accuracies, losses and joules,
the optimizer steps counted per epoch. A version-4 record stores nothing
derived from them (records/derived.py computes it on read); a version-3
record stored the steady SD and CV, the warm-up flags, the final accuracy
and loss, the energy per epoch and the watts, the FLOPs per epoch and per
second: those are recomputed here and compared within float tolerance
before the record is migrated; so are the fields of
one section that must agree with another's (the spec's framework with the
environment's, the spec's precision with the numerics', TF32 with float32,
the start with the end). Each invariant is one function in
:data:`INVARIANTS` returning ``(field, problem)`` or None; the record reader
(run_record.check) refuses the first that fails, naming the field, and
tests/test_invariants.py holds one test per invariant.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics

from mnist_speedup.spec import devices, frameworks, precisions

#: derived values are written with full float precision: this absorbs the last bits of rounding only
TOLERANCE = 1e-6


def _differ(written, derived) -> bool:
    if written is None or derived is None:
        return (written is None) != (derived is None)
    return not math.isclose(written, derived, rel_tol=TOLERANCE, abs_tol=1e-12)


def _steady(r: dict) -> list[float]:
    return r["timing"]["epoch_s"][r["warmup_epochs"] :]


def steady_spread(r: dict):
    """The steady epochs' SD and CV are those of the steady epoch times."""
    steady, t = _steady(r), r["timing"]
    sd = statistics.stdev(steady) if len(steady) > 1 else None
    if _differ(t.get("steady_epoch_std_s"), sd):
        return "timing.steady_epoch_std_s", f"is {t.get('steady_epoch_std_s')!r} but the steady epochs' SD is {sd!r}"
    cv = sd / statistics.fmean(steady) if sd is not None else None
    if "steady_epoch_cv" in t and _differ(t["steady_epoch_cv"], cv):
        return "timing.steady_epoch_cv", f"is {t['steady_epoch_cv']!r} but the steady epochs' CV is {cv!r}"
    return None


def warmup_flags(r: dict):
    flags = r["timing"].get("epoch_is_warmup")
    expected = [i < r["warmup_epochs"] for i in range(r["epochs"])]
    if flags is not None and flags != expected:
        return "timing.epoch_is_warmup", f"is {flags!r} but warmup_epochs {r['warmup_epochs']} makes it {expected!r}"
    return None


def optimizer_steps(r: dict):
    """Each epoch ran every step of steps_per_epoch, less those float16's loss scaling skipped."""
    loop = r["loop"]
    skipped = ((r.get("numerics") or {}).get("loss_scaling") or {}).get("skipped_steps_per_epoch")
    skipped = skipped or [0] * r["epochs"]
    expected = [r["steps_per_epoch"] - s for s in skipped]
    if loop.get("optimizer_steps_per_epoch") != expected:
        return "loop.optimizer_steps_per_epoch", (
            f"is {loop.get('optimizer_steps_per_epoch')!r} but {r['steps_per_epoch']} "
            f"steps per epoch less the skipped ones make {expected!r}"
        )
    calls = math.ceil(r["steps_per_epoch"] / loop["steps_per_call"]) if loop.get("steps_per_call") else None
    if calls is not None and loop.get("calls_per_epoch") != calls:
        return (
            "loop.calls_per_epoch",
            f"is {loop.get('calls_per_epoch')!r} but {loop['steps_per_call']} steps per call make {calls}",
        )
    return None


def final_quality(r: dict):
    """The final validation accuracy and training loss are the last epoch's (parity reads them)."""
    q = r["quality"]
    for final, per_epoch in (("val_accuracy", "epoch_val_accuracy"), ("final_train_loss", "epoch_loss")):
        if q.get(per_epoch) and _differ(q.get(final), q[per_epoch][-1]):
            return f"quality.{final}", f"is {q.get(final)!r} but the last epoch's is {q[per_epoch][-1]!r}"
    return None


def energy(r: dict):
    """Joules per epoch and watts are those of the per-epoch joules; no reading has a reason."""
    e, steady = r.get("energy") or {}, _steady(r)
    joules = e.get("epoch_joules")
    if not joules:
        present = [k for k in ("joules_per_epoch", "mean_watts") if e.get(k) is not None]
        if present:
            return f"energy.{present[0]}", f"is {e[present[0]]!r} with no per-epoch joules to derive it from"
        if e and not (isinstance(e.get("reason"), str) and e["reason"]):
            return "energy.reason", "is missing: a record without an energy reading must say why"
        return None
    if _differ(e.get("joules_per_epoch"), math.fsum(joules) / len(joules)):
        return (
            "energy.joules_per_epoch",
            f"is {e.get('joules_per_epoch')!r} but the per-epoch joules average {math.fsum(joules) / len(joules)!r}",
        )
    watts = math.fsum(joules) / math.fsum(steady)
    if _differ(e.get("mean_watts"), watts):
        return (
            "energy.mean_watts",
            f"is {e.get('mean_watts')!r} but the joules over the steady epochs' seconds are {watts!r} W",
        )
    return None


def flops(r: dict):
    f = r["flops"]
    per_epoch = f["per_step"] * r["steps_per_epoch"]
    if "per_epoch" in f and _differ(f["per_epoch"], per_epoch):
        return (
            "flops.per_epoch",
            f"is {f['per_epoch']!r} but {f['per_step']} per step x {r['steps_per_epoch']} steps is {per_epoch}",
        )
    achieved = per_epoch / statistics.fmean(_steady(r))
    if _differ(f["achieved_per_s"], achieved):
        return (
            "flops.achieved_per_s",
            f"is {f['achieved_per_s']!r} but the FLOPs per epoch over the steady epoch time are {achieved!r}",
        )
    return None


def time_order(r: dict):
    start, end = r.get("started_at"), r.get("finished_at")
    if start and end and dt.datetime.fromisoformat(end) < dt.datetime.fromisoformat(start):
        return "finished_at", f"is {end}, before the run started ({start})"
    return None


def known_words(r: dict):
    """Every word the later jobs look up is one this workflow knows (check_runs refuses it, not a figure's KeyError)."""
    spec = r["device_spec"]
    for field, value, known in (
        ("device_spec.type", spec.get("type"), devices.TYPES),
        ("device_spec.framework", frameworks.name_of(spec), frameworks.declarations()),
        ("device_spec.precision", spec.get("precision") or precisions.DEFAULT, precisions.PRECISIONS),
    ):
        if value not in known:
            return field, f"is {value!r}, which this workflow does not know (it knows {sorted(known)})"
    return None


def framework(r: dict):
    """The spec's framework is the one that ran: the environment names it and its software, and no other's."""
    name, env = frameworks.name_of(r["device_spec"]), r["environment"]
    ran = env.get("framework") or frameworks.DEFAULT
    if ran != name:
        return "device_spec.framework", f"is {name!r} but the environment says {ran!r} trained"
    for other in frameworks.declarations().values():
        versions = [env.get(s) for s in other.software]
        if other.name == name and other.software and versions[0] is None:
            return f"environment.{other.software[0]}", f"is missing: a {other.words} run records its version"
        if other.name != name and any(v is not None for v in versions):
            return "device_spec.framework", f"is {name!r} but the environment records {other.words}'s versions"
    return None


def precision(r: dict):
    """The spec's precision and compiler setting are the ones the numerics recorded."""
    spec, numbers = r["device_spec"], r.get("numerics") or {}
    wanted = spec.get("precision") or precisions.DEFAULT
    if numbers.get("precision", wanted) != wanted:
        return "numerics.precision", f"is {numbers['precision']!r} but the device spec asks for {wanted!r}"
    if numbers and numbers.get("compute_dtype") != precisions.compute_dtype(wanted):
        return (
            "numerics.compute_dtype",
            f"is {numbers.get('compute_dtype')!r}, not {wanted}'s {precisions.compute_dtype(wanted)}",
        )
    if numbers and bool(numbers.get("jit_compile")) != bool(spec.get("jit_compile")):
        return (
            "numerics.jit_compile",
            f"is {numbers.get('jit_compile')!r} but the device spec says {spec.get('jit_compile')!r}",
        )
    return None


#: what says TF32 was on, in each framework's words: the field and the values that mean it
_TF32_ON = {
    "numerics.tf32": (True,),
    "environment.tf32": (True,),
    "environment.torch_matmul_tf32": (True,),
    "environment.torch_cudnn_tf32": (True,),
    "numerics.matmul_precision": ("tensorfloat32", "high", "default"),
}


def tf32_off_in_float32(r: dict):
    """A float32 record ran true float32: no framework's TF32 switch was on (it would be headlined as float32)."""
    if precisions.name_of(r["device_spec"]) != "float32":
        return None
    for dotted, on in _TF32_ON.items():
        section, key = dotted.split(".")
        if (r.get(section) or {}).get(key) in on:
            return (
                dotted,
                f"says TF32 was on ({(r.get(section) or {}).get(key)!r}) in a float32 run: it was not float32",
            )
    return None


INVARIANTS = (
    known_words,
    framework,
    precision,
    tf32_off_in_float32,
    steady_spread,
    warmup_flags,
    optimizer_steps,
    final_quality,
    energy,
    flops,
    time_order,
)


def problems(record: dict) -> list[tuple[str, str]]:
    """Every invariant the record breaks: ``(field, problem)``."""
    return [found for check in INVARIANTS if (found := check(record))]
