#!/usr/bin/env bash
# Mutation score of the modules that decide a number or a decision (issues 22, 32); not run in CI.
# Lays a copy of the project out as src/mnist_speedup (the layout mutmut names
# modules by), generates the mutants with the settings in pyproject.toml, runs
# a random sample of them one at a time and prints the score with its interval.
# Usage: SAMPLE=120 SEED=1 [MODULES="records. analysis.stats"] bash benchmarks/mutation.sh [WORKDIR]
set -euo pipefail
command -v mutmut >/dev/null || { echo "mutmut not found: install the dev extra (pip install -e '.[dev]') and activate that environment" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/mutation-XXXXXX)}"
mkdir -p "$work/src"
cp -r "$root/Snakefile" "$root/config" "$root/profiles" "$root/envs" "$root/tests" "$root/pyproject.toml" "$work/"
cp -r "$root/workflow/mnist_speedup" "$work/src/"
cp -r "$root/workflow/report" "$work/src/report"  # the figure captions, where the package looks for them
cp -r "$root/workflow/schemas" "$work/src/schemas"  # the config schema (spec/schema.py), likewise
mkdir -p "$work/workflow" "$work/benchmarks"
cp -r "$root/workflow/scripts" "$root/workflow/report" "$root/workflow/schemas" "$work/workflow/"  # read by the digest and caption tests
cp -r "$root/benchmarks/h200-2026-12-04" "$root/benchmarks/three-frameworks-2026-12-06" "$work/benchmarks/"  # kept real records
find "$work" -name __pycache__ -prune -exec rm -rf {} +
cd "$work"
export MNIST_SPEEDUP_PACKAGE_ROOT=src
# generate every mutant and map the tests to the functions they call (one mutant run)
mutmut run "mnist_speedup.config.design.x_block_order__mutmut_1" > /dev/null || true
# batched runs misreport in this setup, so a random sample is run one mutant at a time
# shellcheck disable=SC2086  # MODULES: module-name prefixes, split on spaces
python "$root/benchmarks/mutation_sample.py" "${SAMPLE:-120}" "${SEED:-1}" ${MODULES:-} | tee sample.txt
echo "mutation run in $work; the sample and every survivor's diff: $work/sample.txt"
