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

start=$(date +%s)
python3 -m snakemake --cores "$(nproc)" --configfile "$config" --config "mirrors=[\"$mnist\"]"
echo "workflow: $(( $(date +%s) - start )) s"
python3 -m snakemake bundle --cores 1 --configfile "$config" --config "mirrors=[\"$mnist\"]"

results=results/$experiment
cp "$results"/bundle-*.tar.gz "$results"/report.md "$results"/figures/*.png "$out"/
tar -czf "$out/tables-and-logs.tar.gz" "$results"/*.csv "$results"/figures logs/"$experiment"
ls -l "$out"
