#!/usr/bin/env bash
# The GPU answer in one device call: config/gpu.yaml (JAX and PyTorch, on the GPU and on its host's
# CPU) on a machine that has JAX, PyTorch, NumPy, pandas, SciPy, seaborn and PyYAML but no
# TensorFlow, no Snakemake and no network. It uses the machine's own JAX and PyTorch, and every
# record names their versions.
#
#   benchmarks/gpu_run.sh WHEELS MNIST OUT
#
# WHEELS: Snakemake 9.27.1 and its dependencies as wheels for this Python (../shared/wheels/snakemake-py312);
#         "-": use the Snakemake already installed (the rehearsal on a development machine).
# MNIST:  a folder holding the four *-ubyte.gz files.
# OUT:    the folder that comes back; at most 8 files land there (the device tool returns no more):
#         partial-bundle-<host>.tar.gz and partial-report.md, rewritten (verified, atomically) each time a
#         run lands, so that a call killed at its limit still returns every finished run; then
#         bundle-<host>.tar.gz, report.md, speedup.png, tables-and-logs.tar.gz (every table, figure and
#         log) and gpu_run.log: 7 files, and room for a temporary file of a write cut by the call's end.
# Environment:
#   CONFIG     the experiment (default config/gpu.yaml);
#   DEADLINE_S seconds from this script's start by which everything must be in OUT (default 540, under
#              the device tool's 600-second call);
#   RESERVE_S  seconds kept after the time budget for the aggregation, figures, report, bundle and
#              copies (default 60). The workflow's time_budget_s is DEADLINE_S less RESERVE_S, counted
#              from this script's start: no run starts that cannot finish inside it.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
mnist=$(cd "$2" && pwd) out=$(mkdir -p "$3" && cd "$3" && pwd)
exec > >(tee -a "$out/gpu_run.log") 2>&1
config=${CONFIG:-config/gpu.yaml} deadline=${DEADLINE_S:-540} reserve=${RESERVE_S:-60}

if [ "$1" != - ]; then
  site=$(mktemp -d)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$1"/*.whl
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD/workflow${PYTHONPATH:+:$PYTHONPATH}"
experiment=$(python3 -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))['experiment'])" "$config")
results=results/$experiment
python3 - <<'PY'
import importlib.metadata, platform  # versions without importing (JAX and PyTorch take seconds); each record has its own
for name in ("snakemake", "jax", "jaxlib", "torch", "numpy", "pandas", "scipy", "seaborn", "pyyaml", "nvidia-ml-py"):
    try:
        print(name, importlib.metadata.version(name))
    except importlib.metadata.PackageNotFoundError:
        print(name, "MISSING")
print("python", platform.python_version())
PY
nvidia-smi -L || echo "nvidia-smi: none"

# Snakemake's lock of a call killed earlier never blocks this one, nor the job it killed (that job's output
# is marked incomplete; --rerun-incomplete below runs it again); the caches are shared by this call's runs
python3 -m snakemake --unlock --cores 1 --configfile "$config" > /dev/null 2>&1 || true
export MNIST_SPEEDUP_JAX_CACHE=${MNIST_SPEEDUP_JAX_CACHE:-$PWD/.cache/jax} MNIST_SPEEDUP_TORCH_CACHE=${MNIST_SPEEDUP_TORCH_CACHE:-$PWD/.cache/torch}

# the workflow's budget counts from its own process's start (measure/invocation.py): what this script
# spent before it (the wheels, the versions) comes off
budget=$((deadline - reserve - ($(date +%s) - start)))
echo "time budget for calibrations and runs: ${budget} s from Snakemake's start, $((deadline - reserve)) s from the script's (deadline ${deadline} s, reserve ${reserve} s)"
# --keep-going: a device whose runs fail (the captured mode has not yet run on a GPU) does not stop the others;
# the partial bundle then holds every run that finished
python3 -m snakemake all bundle --cores "$(nproc)" --rerun-incomplete --keep-going --configfile "$config" \
  --config "mirrors=[\"$mnist\"]" "time_budget_s=$budget" &
workflow=$!
# every run as it lands: a verified partial bundle and a partial report in OUT, until the workflow ends
python3 -m mnist_speedup.partial "$results" "$out" --config "$config" --while-pid $workflow &
watcher=$!
rc=0
wait $workflow || rc=$?
wait $watcher || echo "the partial-results watcher failed; OUT keeps what it last wrote"
echo "workflow done after $(($(date +%s) - start)) s (exit status $rc)"

# the final files that exist (where the workflow failed, the partial ones are the result)
for f in "$results"/bundle-*.tar.gz "$results"/report.md "$results"/figures/speedup.png; do
  if [ -f "$f" ]; then cp "$f" "$out"/; fi
done
tar -czf "$out/tables-and-logs.tar.gz" --exclude='*.tar.gz' "$results" "logs/$experiment" 2> /dev/null || true
echo "done after $(($(date +%s) - start)) s"
ls -l "$out"
sleep 1 # let tee write the log's last lines before the call ends
exit $rc
