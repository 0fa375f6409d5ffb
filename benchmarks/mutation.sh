#!/usr/bin/env bash
# Mutation score of the modules that decide the number (issue 22); not run in CI.
# Lays a copy of the project out as src/mnist_speedup (the layout mutmut names
# modules by), runs `mutmut run` there with the settings in pyproject.toml, and
# prints the results. Usage: bash benchmarks/mutation.sh [WORKDIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/mutation-XXXXXX)}"
mkdir -p "$work/src"
cp -r "$root/Snakefile" "$root/config" "$root/profiles" "$root/envs" "$root/tests" "$root/pyproject.toml" "$work/"
cp -r "$root/workflow/mnist_speedup" "$work/src/"
cp -r "$root/workflow/report" "$work/src/report"  # the figure captions, where the package looks for them
find "$work" -name __pycache__ -prune -exec rm -rf {} +
cd "$work"
export MNIST_SPEEDUP_PACKAGE_ROOT=src
mutmut run --max-children "${MUTMUT_CHILDREN:-2}" || true
mutmut results --all true > results.txt || true
echo "mutation run in $work; every mutant and its status: $work/results.txt"
