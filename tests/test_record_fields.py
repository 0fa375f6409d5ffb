"""Every field of a run record has its type and physical range checked where
the record enters (issue 31 (5)): no later job may fail on a record that
check_runs passed. The field table (records/fields.py) is held against real
records, so a field added where the record is assembled must be declared."""

import copy
import math
import tarfile

import pytest

from conftest import ROOT
from crafted import make_record, record_refusal, write_records
from mnist_speedup.analysis import aggregate
from mnist_speedup.records import fields, run_record

KEPT = ROOT / "benchmarks" / "h200-2026-12-04"
WRONG = {
    "number": "fast",
    "integer": 2.5,
    "text": 5,
    "flag": "yes",
    "setting": 2.5,
    "numbers": 3.0,
    "integers": [1, "x"],
    "texts": "x",
    "flags": [1],
}


def _set(record: dict, dotted: str, value) -> dict:
    out = copy.deepcopy(record)
    *parents, leaf = dotted.split(".")
    node = out
    for key in parents:
        node = node.setdefault(key, {}) if isinstance(node.get(key), dict) else node.setdefault(key, {})
        if not isinstance(node, dict):
            node = {}
    node[leaf] = value
    return out


_refusal = record_refusal


@pytest.mark.parametrize("field", fields.FIELDS, ids=lambda f: f.dotted)
def test_each_field_of_the_wrong_type_is_refused_by_name(field):
    """Planted once: the old REQUIRED list checked 25 fields' types; a text
    in `interference.epoch_other_cores` passed and crashed the figure job."""
    message = _refusal(_set(make_record(), field.dotted, WRONG[field.kind]))
    assert message and field.dotted in message and "Fix:" in message


@pytest.mark.parametrize("field", [f for f in fields.FIELDS if f.high is not None], ids=lambda f: f.dotted)
def test_each_number_outside_its_physical_range_is_refused(field):
    """Above the range (and below it where a value below is not also the
    wrong type): 1e9 cores, negative watts, an accuracy of 7."""
    kind = field.kind.rstrip("s")
    above = field.high * 10 + 1 if field.high > 0 else 1
    below = field.low - 1 if field.low is not None else None
    for value in (above, below):
        if value is None:
            continue
        value = int(value) if kind == "integer" else float(value)
        value = [value] if field.kind.endswith("s") else value
        assert _refusal(_set(make_record(), field.dotted, value)), (field.dotted, value)


@pytest.mark.parametrize(
    "dotted, value, fragment",
    [
        ("interference.epoch_other_cores", 0.5, "has the wrong type: 0.5 is not a list of numbers"),
        ("interference.epoch_other_cores", ["0.5", 0.1, 0.1], "holds an item that has the wrong type: '0.5' is not"),
        ("interference.epoch_other_cores", [0.1, -1.0, 0.1], "holds an item that is -1.0, outside [0, 16384]"),
        ("interference.epoch_other_cores", [0.1, 1e9, 0.1], "holds an item that is 1000000000.0, outside"),
        ("interference.epoch_other_cores", [0.1, math.nan, 0.1], "is nan, not a number a measurement can have"),
        ("interference", "busy", "is 'busy', not a section of fields"),
    ],
)
def test_the_interference_cases_of_the_trial_are_refused_by_name(tmp_path, dotted, value, fragment):
    """Issue 31 (5), each as the trial found it, through the loading that
    check_runs does: a scalar crashed check_runs, a text crashed the figure,
    negative and 1e9 cores passed, NaN was refused without its field."""
    record = _set(make_record(), dotted, value)
    nan = isinstance(value, list) and any(v != v for v in value)  # JSON's sealing refuses NaN: written as it is
    with pytest.raises(run_record.RecordError) as err:
        aggregate.load_runs(write_records(tmp_path, [record], seal=not nan))
    assert f"`{dotted}` {fragment}" in str(err.value) and "Fix:" in str(err.value)


def _kept_records():
    """The real records kept in the repository: JAX on an H200 and on its host's cores."""
    with tarfile.open(KEPT / "bundle-h200.tar.gz") as tar:
        for member in tar.getmembers():
            if member.name.startswith("runs/") and member.name.endswith(".json"):
                yield member.name, run_record.parse(tar.extractfile(member).read().decode())


def test_real_records_have_no_undeclared_field_and_pass():
    """The table is complete for what the JAX path assembles (the TensorFlow
    path is held in test_workflow.py, where real TensorFlow records exist).
    Planted once: `interference.epoch_other_gpu_processes` left out of the
    table was reported here."""
    names = []
    for name, record in _kept_records():
        assert fields.undeclared(record) == [], name
        assert not list(fields.problems(record)), name
        names.append(name)
    assert len(names) == 8


def test_a_sound_record_has_no_problem_and_an_undeclared_leaf_is_reported():
    record = make_record()
    assert not list(fields.problems(record)) and fields.undeclared(record) == []
    assert fields.undeclared(_set(record, "energy.new_meter", 1.0)) == ["energy.new_meter"]


@pytest.mark.parametrize(
    "dotted",
    [
        "environment.cpu_model",
        "environment.gpu_name",
        "environment.hostname",
        "environment.tensorflow",
        "loop.description",
    ],
)
def test_text_fields_are_bounded_where_they_enter_and_the_message_gives_the_limit(dotted):
    """Issue 40.5: a 200 kB cpu_model made a 615 kB report. Planted once: no length check, and this failed."""
    message = _refusal(_set(make_record(), dotted, "x" * 200_000))
    assert message and f"`{dotted}`" in message and len(message) < 1_000  # the message does not repeat it all
    if dotted != "environment.hostname":  # the hostname's own pattern refuses it first, with its words
        limit = fields.MAX_TEXT if dotted == "loop.description" else fields.MAX_NAME
        assert f"more than the {limit:,} this field may have" in message


@pytest.mark.parametrize(
    "dotted, value, problem",
    [
        ("environment.notes", "x" * 7_000_000, "holds a text of 7,000,000 characters, more than the 4,000"),
        ("environment.trace", ["ok"] * 10_001, "is a list of 10,001 items, more than the 10,000"),
        ("environment.tags", ["a", "y" * 4_001], "holds a text of 4,001 characters"),
    ],
)
def test_an_undeclared_field_is_bounded_where_the_record_enters(dotted, value, problem):
    """Issue 48 (3): the 4,000-character bound held for declared fields only; a 7 MB `environment.notes` passed
    and landed whole in report.md. Planted once: the reader without the undeclared fields' bound accepted all
    three."""
    refusal = record_refusal(_set(make_record(), dotted, value))
    assert refusal and f"`{dotted}` {problem}" in refusal and "Fix:" in refusal
    assert record_refusal(_set(make_record(), dotted, "a short note")) is None  # small undeclared text still passes


def _problem_of(record: dict, dotted: str) -> str | None:
    return next((problem for name, problem in fields.problems(record) if name == dotted), None)


def _at(field, value):
    value = int(value) if field.kind.rstrip("s") == "integer" else float(value)
    return [value] if field.kind.endswith("s") else value


@pytest.mark.parametrize(
    "field",
    [f for f in fields.FIELDS if f.kind.rstrip("s") in ("number", "integer") and (f.high, f.low) != (None, None)],
    ids=lambda f: f.dotted,
)
def test_each_range_holds_its_bounds_and_refuses_the_next_value_beyond(field):
    """Reliability 6 (8): a slip in a range check (`>` for `>=`, a bound off by one) went uncaught: the test
    above plants values ten times out. Here, field by field, the bounds themselves pass the range check and
    the next representable value beyond each is refused by it, named. Planted once: `value >= self.high`
    failed every field with an upper bound."""
    integer = field.kind.rstrip("s") == "integer"
    for bound, outward in ((field.high, math.inf), (field.low, -math.inf)):
        if bound is None:
            continue
        assert _problem_of(_set(make_record(), field.dotted, _at(field, bound)), field.dotted) is None, bound
        beyond = bound + (1 if outward > 0 else -1) if integer else math.nextafter(bound, outward)
        problem = _problem_of(_set(make_record(), field.dotted, _at(field, beyond)), field.dotted)
        assert problem and "outside" in problem, (field.dotted, beyond, problem)


def test_no_field_is_declared_twice():
    """environment.jax_cpu_cores was declared by hand (1 and up) and by JAX's framework.yaml (0 and up): two
    ranges for one field. Found by the bounds test above."""
    names = [f.dotted for f in fields.FIELDS]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})


def test_the_reader_s_own_checks_name_the_value_and_hold_their_bounds():
    """The survivors of the 2026-12-07 mutation sample (benchmarks/RESULTS.md), each planted by mutmut: a
    validation accuracy of exactly 0 is a real accuracy; one above 1 is refused by the accuracies' own check;
    a step of zero seconds is refused (the field's range admits 0, the physics does not); a workload that is no
    workload and a stored FLOP count that disagrees are refused naming the value found."""
    zero = make_record(val_accuracy=[0.0, 0.5, 0.9])
    assert record_refusal(zero) is None
    above = make_record(val_accuracy=[0.4, 1.5, 0.9])
    assert "must hold 3 accuracies in [0, 1]" in record_refusal(above)
    still = make_record()
    still.setdefault("host_overhead", {})["one_call_step_s"] = 0.0
    assert "one_call_step_s" in record_refusal(still) and "a step takes a positive time" in record_refusal(still)
    odd = make_record()
    odd["workload_spec"] = {"type": "mlp", "hidden": "wide"}
    assert "'hidden': 'wide'" in record_refusal(odd)
    wrong = make_record()
    wrong["flops"]["per_step"] = 12345
    assert "is 12345 but" in record_refusal(wrong)
