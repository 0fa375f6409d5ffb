#!/usr/bin/env bash
# The whole workflow on a GPU machine that has JAX (with its CUDA plugin),
# NumPy, pandas, SciPy, matplotlib, seaborn and PyYAML but no TensorFlow,
# no Snakemake and no network: Snakemake comes from a folder of wheels, MNIST
# from a local folder. Ends with the bundle, and copies the bundle, report.md
# and the figures into OUT.
#
#   benchmarks/gpu_run.sh WHEELS MNIST OUT
#
# WHEELS: Snakemake 9.27.1 and its dependencies as wheels for this Python
#         (pip download ... -d WHEELS snakemake==9.27.1; see README, "On a GPU with JAX").
#         "-": use the Snakemake already installed (a rehearsal on a development machine).
# MNIST:  a folder holding the four *-ubyte.gz files.
# CONFIG (environment, default config/gpu.yaml): the experiment to run.
# FIRST_SEEDS (environment, e.g. "[1, 2]"): run and copy out a complete
#   result with these seeds first, then the config's own seeds (their runs
#   are kept and only the new ones run), so that a machine lent for a fixed
#   time returns a whole report even if the second stage is cut short.
# DEADLINE_S (environment): stop the second stage (SIGINT, Snakemake's own
#   clean stop) this many seconds after the script started.
set -euo pipefail
cd "$(dirname "$0")/.."
mnist=$(cd "$2" && pwd) out=$(mkdir -p "$3" && cd "$3" && pwd)
config=${CONFIG:-config/gpu.yaml}
experiment=$(python3 -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))['experiment'])" "$config")

if [ "$1" != - ]; then
  site=$(mktemp -d)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$1"/*.whl
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
python3 - <<'PY'
import importlib, platform
for name in ("snakemake", "jax", "optax", "numpy", "pandas", "scipy", "seaborn", "yaml"):
    module = importlib.import_module(name)
    print(f"{name} {getattr(module, '__version__', '?')}")
import jax
print("python", platform.python_version(), "| jax devices:", jax.devices())
PY
nvidia-smi -L || echo "nvidia-smi: none"

# a call killed earlier (a deadline, a lost machine) leaves Snakemake's lock behind
python3 -m snakemake --unlock --cores 1 --configfile "$config" > /dev/null 2>&1 || true
start=$(date +%s)
results=results/$experiment
stage() { # snakemake arguments...; the workflow, its bundle, and what there is copied to OUT (also on failure)
  local rc=0
  python3 -m snakemake --cores "$(nproc)" --configfile "$config" --config "mirrors=[\"$mnist\"]" "$@" || rc=$?
  python3 -m snakemake bundle --cores 1 --configfile "$config" --config "mirrors=[\"$mnist\"]" "$@" || rc=$?
  cp "$results"/bundle-*.tar.gz "$results"/report.md "$results"/figures/*.png "$out"/ || rc=$?
  tar -czf "$out/tables-and-logs.tar.gz" "$results" logs/"$experiment" || rc=$?
  echo "stage done after $(( $(date +%s) - start )) s (exit status $rc)"
  return $rc
}
if [ -n "${FIRST_SEEDS:-}" ]; then
  stage "seeds=$FIRST_SEEDS"
fi
if [ -n "${DEADLINE_S:-}" ]; then
  left=$(( DEADLINE_S - ($(date +%s) - start) ))
  timeout --signal=INT --kill-after=20 "$left" bash -c "set -euo pipefail; $(declare -f stage); $(declare -p config mnist results out experiment start); stage" \
    || echo "second stage stopped (deadline ${DEADLINE_S} s); $out holds the first stage's result"
else
  stage
fi
ls -l "$out"
