"""Issue 39 (2): a run's fixed cost. With ``probe_each_run: false`` a run takes no rate probe of its own
(the calibration measures each device's rate once per workload), and its record says so."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import ROOT

pytest.importorskip("jax")


def _run(tmp_path, probe_each_run: bool) -> dict:
    rng = np.random.default_rng(0)
    arrays = {
        f"x_{k}": rng.integers(0, 255, (n, 28, 28), dtype=np.uint8)
        for k, n in (("train", 200), ("val", 50), ("test", 50))
    }
    arrays |= {f"y_{k}": rng.integers(0, 10, len(arrays[f"x_{k}"])).astype(np.uint8) for k in ("train", "val", "test")}
    np.savez(tmp_path / "d.npz", **arrays)
    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(ROOT / "workflow")!r})
        from mnist_speedup.measure import record, trainer
        from mnist_speedup.spec import run
        spec = run.RunSpec.with_defaults(workload="mlp", workload_spec={{"type": "mlp", "hidden": [32]}},
                                         device="cpu", device_spec={{"type": "cpu", "threads": 1, "framework": "jax"}},
                                         batch_size=50, seed=1, epochs=2, probe_each_run={probe_each_run})
        measured = trainer.run(spec, {str(tmp_path / "d.npz")!r}, log=lambda *a: None)
        print("RESULT" + json.dumps(record.make_record(spec, measured, lock_wait_s=0.0, training_code="t",
                                                       data_digest="d")))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line, proc.stdout + proc.stderr
    return json.loads(line[6:])


def test_a_run_without_its_own_probe_records_none_and_spends_nothing_on_it(tmp_path):
    from crafted import record_refusal

    probed, unprobed = _run(tmp_path, True), _run(tmp_path, False)
    assert probed["device_rate_probe"]["flops_per_s_median"] > 0 and probed["setup_s"]["rate_probe_s"] > 0
    assert unprobed["device_rate_probe"] is None and "rate_probe_s" not in unprobed["setup_s"]
    assert unprobed["probe_each_run"] is False and record_refusal(unprobed) is None
