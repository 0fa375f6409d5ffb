"""Calibration output, determinism, and the spread arithmetic of the report."""

import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

WORKER = """
import json, sys
sys.path.insert(0, {pkg!r})
from mnist_speedup.spec import run
from mnist_speedup.measure import {module}
{body}
"""


def run_worker(module: str, body: str, **fmt) -> dict:
    code = WORKER.format(pkg=str(ROOT / "workflow"), module=module, body=body.format(**fmt))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line, proc.stdout + proc.stderr
    return json.loads(line[len("RESULT") :])


def test_calibration_output_schema(tmp_path):
    """What calibrate.measure returns, named as the calibrate rule names it,
    is a calibration record the reader accepts (records/calibration.py). In JAX: its import takes about
    2 s where TensorFlow's takes 6-10 s; TensorFlow's calibrations run in test_module's workflow."""
    from mnist_speedup.records import calibration, seal

    out = run_worker(
        "calibrate",
        "r = calibrate.measure({{'type': 'cpu', 'threads': 1, 'framework': 'jax'}}, {{'type': 'mlp'}}, [32, 64], 128, 3,"
        " log=lambda *a: None)\n"
        "print('RESULT' + json.dumps(r))",
    )
    assert out["device_spec"] == {"type": "cpu", "threads": 1, "framework": "jax"}
    assert out["workload_spec"] == {"type": "mlp"} and out["dtype"] == "float32"
    assert set(out["workload_shapes"]) == {"32", "64"}
    for bs, result in out["workload_shapes"].items():
        assert len(result["products"]) == 8 and ["matmul", int(bs), 784, 800] in result["products"]
        assert len(result["flops_per_s_all"]) == 3
        assert result["flops_per_s_median"] == pytest.approx(float(np.median(result["flops_per_s_all"])))
        assert 1e6 < result["flops_per_s_median"] < 1e14
    assert out["square"]["size"] == 128 and out["square"]["flops_per_s_median"] > 0
    named = out | {"schema_version": calibration.SCHEMA_VERSION, "device": "cpu", "workload": "mlp", "code": "c"}
    path = tmp_path / "calibration" / "mlp" / "cpu.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(seal.seal(named)))
    assert calibration.load(path)["dtype"] == "float32"


def test_deterministic_runs_repeat_every_epoch_loss(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.random((600, 784), dtype=np.float32)
    y = rng.integers(0, 10, 600)
    npz = tmp_path / "d.npz"
    np.savez(npz, x_train=x, y_train=y, x_val=x[:100], y_val=y[:100], x_test=x[:100], y_test=y[:100])
    body = (
        "spec = run.RunSpec.with_defaults(workload='mlp', workload_spec={{'type': 'mlp'}}, device='cpu', device_spec={{'type': 'cpu', 'threads': 2}}, batch_size=50, seed=7,"
        " epochs=3, step_samples=0, deterministic=True)\n"
        "from mnist_speedup.measure import record\n"
        "r = record.make_record(spec, trainer.run(spec, {npz!r}, log=lambda *a: None), lock_wait_s=0.0, training_code='t', data_digest='d')\n"
        "print('RESULT' + json.dumps([r['quality']['epoch_loss'], r['deterministic']]))"
    )
    first = run_worker("trainer", body, npz=str(npz))
    second = run_worker("trainer", body, npz=str(npz))  # a separate process, as in the workflow
    assert first[1] is True
    assert first[0] == second[0]  # bit-identical, not approximately equal
