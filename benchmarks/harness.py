"""Benchmark of the measurement harness itself (not part of the test suite).

    python benchmarks/harness.py --mirror ../shared/data/mnist [--threads 2]

Prints one table, measured in one run on one machine, and writes it with the
machine and the date to benchmarks/RESULTS.md:
  (a) steady-state epoch time of our trainer against keras.Model.fit on the
      identical MLP, data, batch size, threads and epochs, interleaved A B A B;
  (b) our trainer's achieved FLOP/s against the calibrated matrix-multiply
      rate at batch 500;
  (c) the whole `snakemake` wall time of the default config against the sum
      of the timed training in its JSONs, the fixed cost per training job,
      and how many of its runs reached the target accuracy (and by when);
  (d) the epoch as one compiled call (`steps_per_call: epoch`) against one
      call per step (`steps_per_call: 1`), at batch 100 and 500, A B A B.
Each measurement runs in its own process, as the workflow's jobs do.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

BATCH = 500
EPOCHS = 4  # 1 warm-up + 3 steady
SPEC = None  # set in workers


def worker_trainer(npz: str, threads: int, batch_size: int = BATCH, steps_per_call="epoch") -> dict:
    from mnist_speedup.measure import trainer
    from mnist_speedup.spec import run

    spec = run.RunSpec.with_defaults(
        workload="mlp", workload_spec={"type": "mlp"},
        device="cpu", device_spec={"type": "cpu", "threads": threads}, batch_size=batch_size, seed=1,
        epochs=EPOCHS, warmup_epochs=1, step_samples=0, steps_per_call=steps_per_call,
    )  # fmt: skip
    record = trainer.run(spec, npz, log=lambda *a: None)
    return {
        "steady_epoch_s": record["timing"]["steady_epoch_mean_s"],
        "achieved_flops_per_s": record["flops"]["achieved_per_s"],
        "test_accuracy": record["quality"]["test_accuracy"],
    }


def worker_keras(npz: str, threads: int) -> dict:
    from mnist_speedup.measure import frameworks, trainer

    framework = frameworks.open_device({"type": "cpu", "threads": threads, "framework": "tensorflow"})
    tf = framework.tf
    keras = tf.keras
    tf.keras.utils.set_random_seed(1)
    data = trainer.load_data(npz)
    model = keras.Sequential([
        keras.Input((784,)),
        keras.layers.Dropout(0.2),
        keras.layers.Dense(800, activation="relu"),
        keras.layers.Dropout(0.5),
        keras.layers.Dense(800, activation="relu"),
        keras.layers.Dropout(0.5),
        keras.layers.Dense(10),
    ])  # fmt: skip
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=1e-4, beta_1=0.9, beta_2=0.999, epsilon=1e-8),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    times = []

    class EpochClock(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            framework.sync()
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            framework.sync()
            times.append(time.perf_counter() - self.t0)

    model.fit(data["x_train"], data["y_train"], batch_size=BATCH, epochs=EPOCHS, shuffle=True, verbose=0,
              callbacks=[EpochClock()])  # fmt: skip
    return {"steady_epoch_s": statistics.fmean(times[1:])}


def worker_calibrate(threads: int) -> dict:
    from mnist_speedup.measure import calibrate

    spec = {"type": "cpu", "threads": threads}
    result = calibrate.measure(spec, {"type": "mlp"}, [BATCH], 2048, 7, log=lambda *a: None)
    return {"calibrated_flops_per_s": result["workload_shapes"][str(BATCH)]["flops_per_s_median"],
            "square_flops_per_s": result["square"]["flops_per_s_median"]}  # fmt: skip


def in_process(kind: str, *args) -> dict:
    cmd = [sys.executable, __file__, "--worker", kind, *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"worker {kind} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(line[len("RESULT ") :])


def prepare_npz(mirror: Path, workdir: Path) -> Path:
    from mnist_speedup.data import mnist

    for name in mnist.FILES:
        mnist.fetch_verified(name, [str(mirror)], workdir / f"{name}.gz", mnist.CANONICAL_SHA256[name],
                             log=lambda *a: None)  # fmt: skip
    npz = workdir / "mnist.npz"
    mnist.prepare(workdir, npz)
    return npz


def snakemake_overhead(mirror: Path, workdir: Path, keep: Path | None = None) -> dict:
    wf = workdir / "wf"
    wf.mkdir()
    for part in ("Snakefile", "config", "workflow", "profiles", "envs"):
        src = ROOT / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, wf / part)
    command = [sys.executable, "-m", "snakemake", "--cores", "4", "--config", f"mirrors=[{str(mirror)!r}]"]
    start = time.perf_counter()
    subprocess.run([*command, "--dry-run"], cwd=wf, check=True, capture_output=True, text=True)
    startup = time.perf_counter() - start  # Snakemake's own start, parse and plan, paid once per call
    start = time.perf_counter()
    subprocess.run(command, cwd=wf, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if keep:
        for part in ("results", "logs"):
            shutil.copytree(wf / part, keep / part, dirs_exist_ok=True)
    timed, fixed, before = 0.0, [], []
    from mnist_speedup.spec import run

    runs = run.run_files(wf / "results" / "default")
    for path in runs:
        r = json.loads(path.read_text())
        epochs = sum(r["timing"]["epoch_s"])
        timed += epochs
        inside = (
            dt.datetime.fromisoformat(r["finished_at"]) - dt.datetime.fromisoformat(r["started_at"])
        ).total_seconds()
        before.append(r["setup_s"].get("before_run_s") or 0.0)
        fixed.append(inside - epochs + before[-1])
    return {
        "wall_s": wall,
        "startup_s": startup,
        "timed_s": timed,
        "jobs": len(runs),
        "overhead_fraction": (wall - timed) / wall,
        "fixed_per_job_s": statistics.fmean(fixed),
        "before_run_s": statistics.fmean(before),
        "speedup_csv": (wf / "results" / "default" / "speedup.csv").read_text(),
        "tta_csv": (wf / "results" / "default" / "time_to_accuracy.csv").read_text(),
        "reached": reached(wf / "results" / "default" / "summary.csv"),
    }


def reached(summary_csv: Path) -> str:
    import pandas as pd

    s = pd.read_csv(summary_csv)
    by = s.groupby("batch_size").agg(runs=("seed", "size"), reached=("target_reached", "sum"),
                                     last_epoch=("epochs_to_target", "max"))  # fmt: skip
    return "; ".join(f"batch {bs}: {int(r.reached)} of {int(r.runs)} runs reached the target, the last at epoch "
                     f"{r.last_epoch:.0f}" for bs, r in by.iterrows())  # fmt: skip


def loop_comparison(npz: Path, threads: int, pairs: int) -> list[tuple]:
    """(d): one call per step against the whole epoch in one call, A B A B."""
    rows = []
    for bs in (100, 500):
        per_step, per_epoch = [], []
        for _ in range(pairs):
            per_step.append(in_process("trainer", npz, threads, bs, 1)["steady_epoch_s"])
            per_epoch.append(in_process("trainer", npz, threads, bs, "epoch")["steady_epoch_s"])
        a, b = statistics.fmean(per_step), statistics.fmean(per_epoch)
        rows.append((f"(d) epoch time, one call per step / whole epoch in one call, batch {bs}", f"{a / b:.2f}x",
                     "> 1x", f"steps_per_call 1: {a:.3f} s, epoch: {b:.3f} s per steady epoch, {threads} threads, "
                     f"{pairs} interleaved pairs (each value: {', '.join(f'{x:.3f}' for x in per_step)} / "
                     f"{', '.join(f'{x:.3f}' for x in per_epoch)})"))  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, default=ROOT.parent / "shared" / "data" / "mnist")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--pairs", type=int, default=2, help="A B pairs for (a)")
    parser.add_argument("--skip-snakemake", action="store_true", help="leave out (c), the longest part")
    parser.add_argument("--only-snakemake", action="store_true", help="measure (c) alone")
    parser.add_argument("--keep", type=Path, help="copy the default run's results/ and logs/ here")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, *rest = args.worker
        fn = {"trainer": worker_trainer, "keras": worker_keras, "calibrate": worker_calibrate}[kind]
        typed = [int(a) if a.isdigit() else a for a in rest]  # "epoch" stays text
        print("RESULT " + json.dumps(fn(*typed)))
        return

    mirror = args.mirror.resolve()
    with tempfile.TemporaryDirectory(prefix="harness-") as tmp:
        tmp = Path(tmp)
        rows = [] if args.only_snakemake else trainer_rows(prepare_npz(mirror, tmp), args)
        overhead = None if args.skip_snakemake else snakemake_overhead(mirror, tmp, args.keep)
    if overhead:
        rows.insert(min(2, len(rows)), (
            "(c) snakemake overhead: (wall - timed training) / wall", f"{overhead['overhead_fraction']:.0%}",
            "<= 25%", f"wall {overhead['wall_s']:.0f} s, timed {overhead['timed_s']:.0f} s over "
            f"{overhead['jobs']} training jobs; fixed cost {overhead['fixed_per_job_s']:.1f} s per job "
            f"({overhead['before_run_s']:.1f} s before our code runs); a dry run of the same call took "
            f"{overhead['startup_s']:.1f} s; {overhead['reached']}"))  # fmt: skip
    table = ["| measure | result | target | detail |", "|---|---|---|---|"]
    table += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    text = "\n".join(table)
    print(text)
    write_results(text, overhead)


def trainer_rows(npz: Path, args) -> list[tuple]:
    """(a), (b) and (d): our trainer against Keras, the calibration and the loop."""
    ours, keras = [], []
    for _ in range(args.pairs):  # interleaved: A B A B
        ours.append(in_process("trainer", npz, args.threads))
        keras.append(in_process("keras", npz, args.threads))
    cal = in_process("calibrate", args.threads)
    loops = loop_comparison(npz, args.threads, args.pairs)
    t_ours = statistics.fmean(r["steady_epoch_s"] for r in ours)
    t_keras = statistics.fmean(r["steady_epoch_s"] for r in keras)
    achieved = statistics.fmean(r["achieved_flops_per_s"] for r in ours)
    rows = [
        ("(a) keras.Model.fit epoch time / our trainer's (higher = ours faster)", f"{t_keras / t_ours:.2f}x",
         ">= 1.2x", f"ours {t_ours:.3f} s, fit {t_keras:.3f} s per steady epoch, batch {BATCH}, {args.threads} threads, "
         f"{args.pairs} interleaved pairs"),
        ("(b) achieved / calibrated FLOP/s at batch 500", f"{achieved / cal['calibrated_flops_per_s']:.0%}",
         ">= 80%", f"achieved {achieved / 1e9:.1f} GFLOP/s, calibrated {cal['calibrated_flops_per_s'] / 1e9:.1f} "
         f"GFLOP/s at the MLP's shapes (square 2048: {cal['square_flops_per_s'] / 1e9:.1f})"),
    ]  # fmt: skip
    return rows + loops


def write_results(text: str, overhead: dict | None) -> None:
    """Prepend this machine's table to benchmarks/RESULTS.md (newest first)."""
    from mnist_speedup.measure import environment

    machine = f"{platform.node()}, {environment.cpu_model()}, {os.cpu_count()} logical cores, " \
              f"{platform.platform()}, Python {platform.python_version()}"  # fmt: skip
    cmd = "python benchmarks/harness.py " + " ".join(sys.argv[1:])
    out = ROOT / "benchmarks" / "RESULTS.md"
    block = f"## {dt.date.today().isoformat()}: {machine}\n\n`{cmd}`\n\n{text}\n"
    if overhead:
        block += "\nspeedup.csv of the default run:\n\n```\n" + overhead["speedup_csv"] + "```\n"
        block += "\ntime_to_accuracy.csv of the default run:\n\n```\n" + overhead["tta_csv"] + "```\n"
    header = "# Harness benchmark results\n\nNewest first. Produced by `benchmarks/harness.py`.\n\n"
    old = out.read_text().removeprefix(header) if out.exists() else ""
    out.write_text(header + block + "\n" + old)


if __name__ == "__main__":
    main()
