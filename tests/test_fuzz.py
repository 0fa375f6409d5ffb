"""Reliability 6 (5): no uncaught exception from outside data. The record, calibration, manifest and config
readers get generated inputs (hypothesis, derandomized: the same examples on every run), each a valid input
with one value replaced by arbitrary JSON (finite: NaN is refused before sealing, tests/test_records.py); each reader either accepts it or refuses it with its own error,
which names the file or key and the fix. Planted once: the time check without its offset test let a naive
finished_at through to a TypeError, and the fuzzer found it."""

import copy
import io
import json
import tarfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from crafted import make_calibration, make_record
from mnist_speedup.config import parse as config_check
from mnist_speedup.records import bundle, calibration, fields, seal
from mnist_speedup.records import run_record as records

FUZZ = settings(derandomize=True, max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
#: plausible slips beside arbitrary values: times without their offset, huge and negative numbers
SLIPS = st.sampled_from(["2026-12-07T10:00:00", "2026-12-07T10:00:00+01:00", -1, 10**30, "", "nan", [], {}])
VALUE = SLIPS | JSON


def _replaced(document: dict, choice: int, value) -> dict:
    """``document`` with its ``choice``-th leaf (in dotted order, modulo their number) set to ``value``."""
    names = sorted(fields.leaves(document))
    *parents, leaf = names[choice % len(names)].split(".")
    out = copy.deepcopy(document)
    node = out
    for key in parents:
        node = node[key]
    node[leaf] = value
    return out


@FUZZ
@given(choice=st.integers(0, 10_000), value=VALUE)
def test_the_record_reader_accepts_or_names_the_field(choice, value):
    try:
        records.check(seal.seal(_replaced(make_record(), choice, value)), "rec.json")
    except records.RecordError as exc:
        assert "rec.json" in str(exc) and "Fix:" in str(exc)


@FUZZ
@given(choice=st.integers(0, 10_000), value=VALUE)
def test_the_calibration_reader_accepts_or_names_the_file(tmp_path_factory, choice, value):
    path = tmp_path_factory.mktemp("cal") / "calibration" / "mlp" / "cpu.json"  # where its place says
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(seal.seal(_replaced(make_calibration("cpu"), choice, value))))
    try:
        calibration.load(path)
    except records.RecordError as exc:
        assert str(path) in str(exc) and "Fix:" in str(exc)


def _bundle(folder, manifest: bytes):
    path = folder / "bundle-box.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(bundle.MANIFEST)
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
    return path


@FUZZ
@given(value=VALUE)
def test_the_bundle_reader_accepts_or_names_the_manifest(tmp_path_factory, value):
    folder = tmp_path_factory.mktemp("bundle")
    meta = {"bundle_schema_version": bundle.SCHEMA_VERSION, "host": "box", "files": value}
    for manifest in (json.dumps(meta).encode(), json.dumps(value).encode()):
        try:
            bundle.unpack(_bundle(folder, manifest), folder / "out")
        except (bundle.BundleError, records.RecordError) as exc:
            assert "bundle-box.tar.gz" in str(exc)


BASE = {"mirrors": ["/data/mnist"], "devices": {"cpu": {"type": "cpu", "threads": 1}}, "seeds": [1], "epochs": 2}
KEYS = ["epochs", "seeds", "batch_sizes", "devices", "workloads", "learning_rate", "adam", "target_accuracy",
        "time_budget_s", "figure", "calibration", "baseline", "train_samples", "steps_per_call"]  # fmt: skip


@FUZZ
@given(key=st.sampled_from(KEYS), value=VALUE)
def test_the_config_check_accepts_or_names_the_key(key, value):
    try:
        config_check.parse(
            copy.deepcopy(BASE) | {key: value}, None, ROOT / "workflow" / "schemas" / "config.schema.yaml", gpus=[]
        )
    except config_check.ConfigError as exc:
        assert "Fix" in str(exc)
