"""Each framework's product path against a plain probe in that framework alone (not part of the test suite).

    python benchmarks/frameworks_bench.py --mirror ../shared/data/mnist [--threads 2] [--pairs 2] [--frameworks pytorch]
    python benchmarks/frameworks_bench.py --mirror ../shared/data/mnist --neighbour   # PyTorch beside a spinning process
    python benchmarks/frameworks_bench.py --mirror ../shared/data/mnist --workload vit  # the ViT (benchmarks/vit_probes.py)
    python benchmarks/frameworks_bench.py --mirror ../shared/data/mnist --modes  # PyTorch's modes (modes_bench.py)

For TensorFlow, JAX and PyTorch in turn, A B A B in one run, each measurement its own process:
  A: the product path (trainer.run through the framework seam, as a training job runs it);
  B: a plain probe of the same MLP (784-800-800-10, dropout 0.2/0.5/0.5), Adam 1e-4, batch, threads and data
     (preloaded, a permutation per epoch), written in that framework alone, one optimizer step per batch
     (with --workload vit: the default ViT at batch 100, Adam 1e-3, probes in benchmarks/vit_probes.py).
Prints, per framework: each pair's steady epoch times and the ratio plain / product (the product path's speed
as a share of the plain probe's: 1.00 is as fast), the product path's fixed cost beyond its epochs broken down
(process start, imports, data, build, compilation, rate probe), and its achieved share of the rate probe.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import probe_loops  # noqa: E402

FRAMEWORKS = ("tensorflow", "jax", "pytorch")
BATCH, EPOCHS, SAMPLES = 500, 4, 10_000  # 1 warm-up epoch and 3 steady ones of 20 steps each
DROPOUT, HIDDEN = (0.2, 0.5, 0.5), (800, 800)
#: each workload's spec, batch size and learning rate
WORKLOADS = {"mlp": ({"type": "mlp"}, BATCH, 1e-4), "vit": ({"type": "vit"}, 100, 1e-3)}


def product(framework: str, npz: str, threads: int, workload: str = "mlp", batch: int = 0, mode: str = "") -> dict:
    from mnist_speedup.measure import trainer
    from mnist_speedup.spec import run, workloads

    workload_spec, default_batch, lr = WORKLOADS[workload]
    batch = batch or default_batch
    device_spec = {"type": "cpu", "threads": threads, "framework": framework, "precision": "float32",
                   "jit_compile": framework == "jax"} | ({"mode": mode} if mode else {})  # fmt: skip
    spec = run.RunSpec.with_defaults(
        workload=workload, workload_spec=workload_spec, device="cpu", batch_size=batch, seed=1, learning_rate=lr,
        device_spec=device_spec, epochs=EPOCHS, warmup_epochs=1, step_samples=0, train_samples=SAMPLES,
    )  # fmt: skip
    r = trainer.run(spec, npz, log=lambda *a: None)
    # raw measurements only (records/derived.py derives the rest on read): the steady mean, and the FLOP/s
    steady = statistics.fmean(r["timing"]["epoch_s"][1:])
    achieved = workloads.of(workload_spec).training_step_flops(batch) * r["steps_per_epoch"] / steady
    return {"steady_epoch_s": steady, "setup_s": r["setup_s"],
            "epochs_s": sum(r["timing"]["epoch_s"]) + sum(r["timing"]["epoch_eval_s"]),
            "achieved_share": achieved / r["device_rate_probe"]["flops_per_s_median"]}  # fmt: skip


def _data(npz: str):
    import numpy as np

    with np.load(npz) as d:
        x, y = d["x_train"][:SAMPLES].reshape(-1, 784).astype("float32") / 255.0, d["y_train"][:SAMPLES]
    return x, y.astype("int64")


def _timed(epoch) -> float:
    times = []
    for _ in range(EPOCHS):
        t = time.perf_counter()
        epoch()
        times.append(time.perf_counter() - t)
    return statistics.fmean(times[1:])


def plain_pytorch(npz: str, threads: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    x, y = (torch.from_numpy(a) for a in _data(npz))
    layers, widths = [], (784, *HIDDEN, 10)
    for i, (rate, (a, b)) in enumerate(zip(DROPOUT, zip(widths, widths[1:]))):
        layers += [torch.nn.Dropout(rate), torch.nn.Linear(a, b)] + ([torch.nn.ReLU()] if i < 2 else [])
    net = torch.nn.Sequential(*layers)
    epoch = probe_loops.pytorch(torch, net, torch.optim.Adam(net.parameters(), lr=1e-4), x, y, BATCH)
    return {"steady_epoch_s": _timed(epoch)}


def plain_jax(npz: str, threads: int) -> dict:
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:threads])
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    x, y = (jnp.asarray(a) for a in _data(npz))
    widths, rng = (784, *HIDDEN, 10), np.random.default_rng(0)
    params = [
        (jnp.asarray(rng.normal(0, 0.05, (a, b)).astype("float32")), jnp.zeros(b)) for a, b in zip(widths, widths[1:])
    ]
    opt = optax.adam(1e-4)

    def loss_fn(params, xb, yb, key):
        keys = jax.random.split(key, 3)
        h = xb
        for i, ((w, b), rate) in enumerate(zip(params, DROPOUT)):
            h = jnp.where(jax.random.bernoulli(keys[i], 1 - rate, h.shape), h / (1 - rate), 0)
            h = h @ w + b
            h = jax.nn.relu(h) if i < 2 else h
        return optax.softmax_cross_entropy_with_integer_labels(h, yb).mean()

    @jax.jit
    def step(params, state, xb, yb, key):
        loss, grads = jax.value_and_grad(loss_fn)(params, xb, yb, key)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    epoch = probe_loops.jax(jax, step, params, opt.init(params), x, y, BATCH)
    epoch()  # compile outside every clock
    return {"steady_epoch_s": _timed(epoch)}


def plain_tensorflow(npz: str, threads: int) -> dict:
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    x, y = (tf.constant(a) for a in _data(npz))
    layers = []
    for i, rate in enumerate(DROPOUT):
        layers += [
            tf.keras.layers.Dropout(rate),
            tf.keras.layers.Dense((*HIDDEN, 10)[i], activation="relu" if i < 2 else None),
        ]
    net = tf.keras.Sequential([tf.keras.Input((784,)), *layers])
    epoch = probe_loops.tensorflow(tf, net, tf.keras.optimizers.Adam(1e-4), x, y, BATCH)
    epoch()  # trace outside every clock
    return {"steady_epoch_s": _timed(epoch)}


def plain_vit(framework: str, npz: str, threads: int) -> dict:
    import vit_probes

    _, batch, lr = WORKLOADS["vit"]
    return {"steady_epoch_s": getattr(vit_probes, framework)(*_data(npz), threads, batch, lr, _timed)}


def in_process(kind: str, framework: str, npz: Path, threads: int, spin: bool = False, workload: str = "mlp",
               batch: int = 0, mode: str = "") -> dict:  # fmt: skip
    """One measurement in a fresh process (as a training job), optionally beside a spinning neighbour."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if spin else None
    start = time.perf_counter()
    try:
        worker = [kind, framework, str(npz), str(threads), workload, str(batch), mode or "-"]
        proc = subprocess.run([sys.executable, __file__, "--worker", *worker],
                              capture_output=True, text=True, timeout=1800, env={**os.environ, "PYTHONHASHSEED": "0"})  # fmt: skip
    finally:
        if spinner:
            spinner.kill()
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    if line is None:
        raise RuntimeError(proc.stdout[-2000:] + proc.stderr[-4000:])
    return {**json.loads(line[6:]), "process_s": time.perf_counter() - start}


def compare(npz: Path, threads: int, pairs: int, frameworks=FRAMEWORKS, workload: str = "mlp") -> list[str]:
    lines = ["| framework | pair | product epoch (s) | plain epoch (s) | plain / product | fixed cost beyond epochs (s) | "
             "of which: before our code, import, data, build, data to device, compile, rate probe | achieved share of the rate probe |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for fw in frameworks:
        for pair in range(1, pairs + 1):
            plain = f"plain_{fw}" if workload == "mlp" else "plain_vit"
            a, b = in_process("product", fw, npz, threads, workload=workload), in_process(plain, fw, npz, threads)
            s = a["setup_s"]
            parts = ", ".join(f"{s.get(k) or 0:.2f}" for k in ("before_run_s", "import_s", "data_load_s", "build_s",
                                                                "data_to_device_s", "trace_s", "rate_probe_s"))  # fmt: skip
            fixed = a["process_s"] - a["epochs_s"]
            lines.append(f"| {fw} | {pair} | {a['steady_epoch_s']:.3f} | {b['steady_epoch_s']:.3f} | "
                         f"{b['steady_epoch_s'] / a['steady_epoch_s']:.2f} | {fixed:.1f} | {parts} | {a['achieved_share']:.0%} |")  # fmt: skip
            print(lines[-1], flush=True)
    return lines


def neighbour(npz: Path, threads: int) -> list[str]:
    lines = ["| PyTorch plain probe | alone | beside a spinning process |", "|---|---|---|"]
    for n in sorted({threads, 1}, reverse=True):
        alone = in_process("plain_pytorch", "pytorch", npz, n)["steady_epoch_s"]
        busy = in_process("plain_pytorch", "pytorch", npz, n, spin=True)["steady_epoch_s"]
        lines.append(f"| {n} thread{'s' if n != 1 else ''} | {alone:.2f} s | {busy:.2f} s ({busy / alone:.1f}x) |")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, default=ROOT.parent / "shared" / "data" / "mnist")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--neighbour", action="store_true", help="PyTorch alone and beside a spinning process")
    parser.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, default=FRAMEWORKS, help="default: all three")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="mlp")
    parser.add_argument(
        "--modes", action="store_true", help="PyTorch's modes beside TensorFlow and JAX (modes_bench.py)"
    )
    parser.add_argument("--worker", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, fw, npz, threads, workload, batch, mode = args.worker
        if kind == "product":
            result = product(fw, npz, int(threads), workload, int(batch), "" if mode == "-" else mode)
        elif kind == "profile":
            import modes_bench

            result = modes_bench.profile(npz, int(threads), int(batch), mode)
        elif kind == "plain_vit":
            result = plain_vit(fw, npz, int(threads))
        else:
            result = globals()[kind](npz, int(threads))
        print("RESULT" + json.dumps(result))
        return
    import harness

    npz = harness.prepare_npz(args.mirror, Path("/tmp/frameworks-bench"))
    print(
        f"machine: {platform.node()}, {os.cpu_count()} logical cores, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}; {args.workload} at batch {WORKLOADS[args.workload][1]}, {SAMPLES} images "
        f"per epoch, {args.threads} threads"
    )
    if args.neighbour:
        lines = neighbour(npz, args.threads)
    elif args.modes:
        import modes_bench

        lines = modes_bench.compare(npz, args.threads, args.pairs)
    else:
        lines = compare(npz, args.threads, args.pairs, args.frameworks, args.workload)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
