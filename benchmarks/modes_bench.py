"""PyTorch's modes on this CPU beside TensorFlow and JAX, and where a PyTorch step's time goes (issue 50).

    python benchmarks/frameworks_bench.py --mirror ../shared/data/mnist --modes [--threads 2] [--pairs 2]

A B in one run, each measurement its own process through the product path (trainer.run, as a training job):
at batch 100, 500 and 2000, TensorFlow, JAX and PyTorch in each mode (eager, fused, compiled, captured), the
order of the devices reversed in every other round. Prints each one's steady epoch time and its achieved share of
the rate probe (the device's rate at the workload's own shapes, measured in the same process just before the
epochs), then torch.profiler's view of steps of eager and of the best mode at batch 500: per step, the wall
time and the self time of the operators by kind (matrix products, dropout, Adam, data, other operators), and
what lies outside every operator (Python and the dispatcher).
"""

from __future__ import annotations

import statistics
import time

BATCHES = (100, 500, 2000)
MODES = ("eager", "fused", "compiled", "captured")
#: (framework, mode) in the order of a round
DEVICES = (("tensorflow", ""), ("jax", ""), *(("pytorch", m) for m in MODES))
#: an operator's kind from its name (torch.profiler's key_averages), first match wins
KINDS = (
    # torch.compile's own kernels (Inductor's fused element-wise code: dropout's masks, ReLU, Adam) run inside
    # the call of each compiled graph, which the profiler shows as one event
    ("compiled graphs' fused kernels", ("compiledfxgraph",)),
    ("matrix products", ("addmm", "aten::mm", "bmm", "matmul", "linear")),
    ("dropout", ("bernoulli", "dropout")),
    ("Adam", ("adam", "_foreach", "lerp", "addcdiv", "addcmul")),
    ("data", ("aten::index", "randperm", "index_select")),
)
PROFILED_STEPS = 20


def compare(npz, threads: int, rounds: int) -> list[str]:
    from frameworks_bench import in_process

    found: dict = {}
    for r in range(rounds):
        for batch in BATCHES:
            order = DEVICES if r % 2 == 0 else DEVICES[::-1]
            for fw, mode in order:
                got = in_process("product", fw, npz, threads, batch=batch, mode=mode)
                found.setdefault((batch, fw, mode), []).append(got)
                print(f"round {r + 1}, batch {batch}, {fw} {mode}: {got['steady_epoch_s']:.3f} s", flush=True)
    lines = _table(found)
    best = min(MODES, key=lambda m: statistics.fmean(g["steady_epoch_s"] for g in found[500, "pytorch", m]))
    for mode in dict.fromkeys(("eager", best, "captured")):
        lines += ["", f"torch.profiler, {mode}, batch 500 ({PROFILED_STEPS} steps after the warm-up):", ""]
        lines += in_process("profile", "pytorch", npz, threads, batch=500, mode=mode)["table"]
    return lines


def _table(found: dict) -> list[str]:
    lines = [
        "| batch | device | steady epoch (s), each round | mean | over PyTorch eager | achieved share of the rate probe |",
        "|---|---|---|---|---|---|",
    ]
    for batch in BATCHES:
        eager = statistics.fmean(g["steady_epoch_s"] for g in found[batch, "pytorch", "eager"])
        for fw, mode in DEVICES:
            got = found[batch, fw, mode]
            times = [g["steady_epoch_s"] for g in got]
            share = statistics.fmean(g["achieved_share"] for g in got)
            name = f"{fw} {mode}".strip()
            lines.append(
                f"| {batch} | {name} | {', '.join(f'{t:.3f}' for t in times)} | {statistics.fmean(times):.3f} | "
                f"{eager / statistics.fmean(times):.2f}x | {share:.0%} |"
            )
    return lines


def profile(npz: str, threads: int, batch: int, mode: str) -> dict:
    """Steps of one mode under torch.profiler, after its warm-up: the time per step by kind, and the top operators."""
    import numpy as np
    from torch.profiler import ProfilerActivity, profile

    from mnist_speedup.measure import frameworks
    from mnist_speedup.spec import run

    with np.load(npz) as d:
        x, y = d["x_train"][:10_000].reshape(-1, 784).astype("float32") / 255.0, d["y_train"][:10_000]
    spec_d = {"type": "cpu", "threads": threads, "framework": "pytorch", "precision": "float32", "mode": mode}
    fw = frameworks.open_device(spec_d, seed=1)
    spec = run.RunSpec.with_defaults(workload="mlp", workload_spec={"type": "mlp"}, device="cpu",
                                     device_spec=spec_d, batch_size=batch, seed=1, epochs=2)  # fmt: skip
    training = fw.training(spec, {"x_train": x, "y_train": y.astype("uint8")}, PROFILED_STEPS, {})
    training.warm_up()
    training.run_epoch()  # one unprofiled epoch first
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        float(training.run_epoch())
        wall = time.perf_counter() - start
    return {"table": _profile_lines(prof.key_averages(), wall)}


def _profile_lines(events, wall: float) -> list[str]:
    ops = [e for e in events if e.key.startswith("aten::") or "CompiledFxGraph" in e.key]
    per = {kind: 0.0 for kind, _ in KINDS} | {"other operators": 0.0}
    for e in ops:
        kind = next((k for k, names in KINDS if any(n in e.key.lower() for n in names)), "other operators")
        per[kind] += e.self_cpu_time_total / 1e6
    inside = sum(per.values())
    per["outside every operator (Python, dispatch)"] = max(wall - inside, 0.0)
    lines = ["| per step | ms | share of the step |", "|---|---|---|"]
    lines += [f"| {k} | {v / PROFILED_STEPS * 1e3:.2f} | {v / wall:.0%} |" for k, v in per.items()]
    lines.append(f"| the step (wall) | {wall / PROFILED_STEPS * 1e3:.2f} | 100% |")
    top = sorted(ops, key=lambda e: e.self_cpu_time_total, reverse=True)[:8]
    lines += ["", "| top operators by self time | calls | self ms per step |", "|---|---|---|"]
    lines += [f"| {e.key} | {e.count} | {e.self_cpu_time_total / 1e3 / PROFILED_STEPS:.2f} |" for e in top]
    return lines
