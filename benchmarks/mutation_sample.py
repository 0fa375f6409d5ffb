"""Mutation score from a random sample of mutants, each run on its own.

Run by benchmarks/mutation.sh inside its mutmut work folder, after
`mutmut run` has generated the mutants and mapped tests to functions. Batched
`mutmut run` misreports here (mutants that a run of their own kills are
reported as survived when many run in one call), so each sampled mutant is
run alone: `mutmut run NAME`. Prints the score with a 95% interval and
every surviving mutant's diff.

Usage: python mutation_sample.py N [SEED] [MODULE_PREFIX...]
(MODULE_PREFIX, e.g. ``records.``: sample only the mutants of modules whose name starts with one of them)
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from scipy.stats import beta


def mutants() -> list[str]:
    out = subprocess.run(["mutmut", "results", "--all", "true"], capture_output=True, text=True).stdout
    return sorted(m.group(1) for m in re.finditer(r"^\s*(\S+__mutmut_\d+): ", out, re.M))


def run_alone(name: str) -> tuple[str, str]:
    out = subprocess.run(["mutmut", "run", name], capture_output=True, text=True, timeout=900).stdout
    marks = {"🎉": "killed", "🙁": "survived", "⏰": "timeout", "🫥": "no test reaches it"}
    status = next((word for mark, word in marks.items() if f"{mark} {name}" in out), "error")
    return name, status


def diff(name: str) -> str:
    shown = subprocess.run(["mutmut", "show", name], capture_output=True, text=True).stdout
    return "\n".join(line for line in shown.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---"))


def module_of(name: str) -> str:
    """``mnist_speedup.analysis.stats.x_fieller__mutmut_3`` -> ``analysis.stats``."""
    return ".".join(name.split("__mutmut_")[0].split(".")[1:-1])


def score(killed: int, judged: int) -> str:
    """Killed of judged, with its 95% Clopper-Pearson interval."""
    if not judged:
        return "none judged"
    low = beta.ppf(0.025, killed, judged - killed + 1) if killed else 0.0
    high = beta.ppf(0.975, killed + 1, judged - killed) if judged > killed else 1.0
    return f"killed {killed} of {judged} judged: {killed / judged:.1%} (95% Clopper-Pearson {low:.1%}-{high:.1%})"


def main() -> None:
    n, seed = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0
    prefixes = tuple(sys.argv[3:])
    every = [m for m in mutants() if not prefixes or module_of(m).startswith(prefixes)]
    sample = sorted(random.Random(seed).sample(every, min(n, len(every))))
    results = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for name, status in pool.map(run_alone, sample):  # each as it ends: a run cut short keeps what it judged
            results[name] = status
            print(f"{len(results)}/{len(sample)} {status} {name}", flush=True)
    killed = sum(s == "killed" for s in results.values())
    survived = [m for m, s in results.items() if s == "survived"]
    other = [m for m, s in results.items() if s not in ("killed", "survived")]
    print(f"{len(every)} mutants in all; a random sample of {len(sample)} (seed {seed}), each run alone")
    print(f"all modules: {score(killed, killed + len(survived))}")
    for module in sorted({module_of(m) for m in sample}):
        mine = [s for m, s in results.items() if module_of(m) == module]
        print(f"  {module}: {score(mine.count('killed'), mine.count('killed') + mine.count('survived'))}")
    if other:
        print("not judged: " + ", ".join(f"{m} ({results[m]})" for m in other))
    for name in survived:
        print(f"\nSURVIVED {name}\n{diff(name)}")


if __name__ == "__main__":
    main()
