"""One framework's calibration and one short run of a workload, in a process of their own (as the workflow
runs each job), read back through the strict reader: tests/test_plugins.py and tests/test_vit.py."""

import json
import subprocess
import sys
import textwrap


def calibrate_and_train(workflow_dir, workload: dict, framework: str, npz, folder, epochs: int = 3) -> dict:
    """The calibrated products at batch 32 (and whether NumPy ran them too), and the run's FLOPs per step,
    per-epoch training loss and test accuracy (batch 50, Adam 1e-3, one thread)."""
    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(workflow_dir)!r})
        from mnist_speedup.measure import calibrate, record, trainer
        from mnist_speedup.records import run_record
        from mnist_speedup.spec import run
        workload, device = {workload!r}, {{"type": "cpu", "threads": 1, "framework": {framework!r}}}
        rate = calibrate.measure(device, workload, [32], square_size=64, repeats=1, log=lambda *a: None)
        spec = run.RunSpec.with_defaults(workload="w", workload_spec=workload, device="cpu-{framework}",
                                         device_spec=device, batch_size=50, seed=1, epochs={epochs},
                                         learning_rate=1e-3, step_samples=3)
        measured = trainer.run(spec, {str(npz)!r}, log=lambda *a: None)
        made = record.make_record(spec, measured, lock_wait_s=0.0, training_code="t", data_digest="d")
        path = {str(folder / f"{framework}.json")!r}
        open(path, "w").write(json.dumps(made))
        read = run_record.load(path)
        print("RESULT" + json.dumps({{"calibrated": rate["workload_shapes"]["32"]["products"],
                                      "numpy": "numpy" in rate["workload_shapes"]["32"],
                                      "flops": read["flops"]["per_step"],
                                      "epoch_loss": read["quality"]["epoch_loss"],
                                      "accuracy": read["quality"]["test_accuracy"]}}))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line, f"exit {proc.returncode}: " + proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(line[6:])
