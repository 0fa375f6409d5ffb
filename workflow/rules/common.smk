# Configuration validation, device resolution and input functions.
import datetime
import hashlib
import os
import random
import re
import socket
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import validate

# Every path from this file's own location, so that the workflow also runs
# as a module of another workflow (whose working directory is elsewhere).
WORKFLOW_DIR = Path(workflow.current_basedir).resolve().parent
sys.path.insert(0, str(WORKFLOW_DIR))

from mnist_speedup import config as config_check  # noqa: E402
from mnist_speedup import devices as device_info  # noqa: E402
from mnist_speedup import bundle, mnist, progress, records  # noqa: E402

SCHEMA = WORKFLOW_DIR.parent / "config" / "schemas" / "config.schema.yaml"
try:
    # --config values arrive as text; coerce, check in our words, then let
    # the schema fill in the defaults and check how the keys fit together
    config_check.prepare(config, workflow.config_settings.config, SCHEMA)
    validate(config, str(SCHEMA))
    config_check.check(config)
except config_check.ConfigError as exc:
    raise WorkflowError(f"Invalid configuration: {exc}") from None

DEVICES = config["devices"]
# Every output of an experiment lives under its own folder, so that another
# config (config/seed.yaml, a reduced one) never overwrites or reruns it.
EXPERIMENT = config["experiment"]
RESULTS = f"results/{EXPERIMENT}"
LOGS = f"logs/{EXPERIMENT}"


def file_name_part(text):
    """``text`` with anything unsafe in a file name replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text) or "_"


# this machine, as it names its results bundle
HOST = file_name_part(socket.gethostname())
BASELINE = config["baseline"]
PACKAGE = WORKFLOW_DIR / "mnist_speedup"

# The code whose change must rerun training: the trainer and what it calls.
# Hashed into a param, so Snakemake's params trigger reruns exactly the
# training jobs when it changes (and nothing when the README or plots do).
TRAINING_CODE = (
    "trainer.py",
    "model.py",
    "tfdevice.py",
    "environment.py",
    "calibrate.py",
    "energy.py",
)


def code_digest(names):
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode())
        digest.update((PACKAGE / name).read_bytes())
    return digest.hexdigest()[:16]


TRAINING_CODE_DIGEST = code_digest(TRAINING_CODE)
CALIBRATION_CODE_DIGEST = code_digest(
    ("calibrate.py", "model.py", "tfdevice.py", "environment.py")
)
# Likewise for the presentation stages: their package code, not just the
# thin rule scripts that Snakemake's code trigger already covers.
AGGREGATE_CODE_DIGEST = code_digest(
    ("aggregate.py", "records.py", "stats.py", "tta.py", "drift.py")
)
FIGURE_CODE_DIGEST = code_digest(("figure.py", "stats.py", "tta.py", "drift.py"))
REPORT_CODE_DIGEST = code_digest(("report.py", "drift.py"))

# Timing jobs must never overlap. The workflow profile (profiles/default)
# caps the `timing_slot` resource at 1; without it, warn loudly. The
# training script also takes a per-host lock, so runs on one machine are
# serialised even then (they wait instead of corrupting each other).
if "timing_slot" not in workflow.global_resources and (workflow.cores or 1) > 1:
    logger.warning(
        "WARNING: the `timing_slot` resource has no limit (profiles/default was not loaded, "
        "e.g. --workflow-profile none or the Python API). Training jobs will wait for each "
        "other through a per-host lock instead; pass --resources timing_slot=1 or use the "
        "workflow profile so the scheduler runs them one at a time."
    )


wildcard_constraints:
    device=device_info.LABEL_PATTERN,
    batch_size=r"[1-9][0-9]*",
    seed=r"[0-9]+",


def block_order():
    """The order of the training runs: randomised complete blocks. A block
    is one (seed, batch size), seed-major so that a new seed appends its
    blocks; every device runs once per block, in an order shuffled per
    block with a fixed seed (reproducible). Returns {(device, bs, seed): position}."""
    order = {}
    for seed in config["seeds"]:
        for batch_size in config["batch_sizes"]:
            devices = sorted(DEVICES)
            random.Random(f"block {seed} {batch_size}").shuffle(devices)
            for device in devices:
                order[(device, batch_size, seed)] = len(order)
    return order


BLOCK_ORDER = block_order()
# for the console's progress line of each finished run (jobs inherit these)
os.environ.setdefault(progress.START, datetime.datetime.now(datetime.UTC).isoformat())
os.environ[progress.TOTAL] = str(len(BLOCK_ORDER))
# Snakemake runs the ready job of highest priority first; with one
# timing_slot, jobs run one at a time in exactly this order.
CALIBRATION_PRIORITY = 2 * len(BLOCK_ORDER) + len(DEVICES) + 10


def train_priority(wildcards):
    key = (wildcards.device, int(wildcards.batch_size), int(wildcards.seed))
    return 2 * len(BLOCK_ORDER) - BLOCK_ORDER.get(key, len(BLOCK_ORDER))


def calibration_priority(wildcards):
    return CALIBRATION_PRIORITY - sorted(DEVICES).index(wildcards.device)


def run_files():
    """This machine's run records for every device x batch size x seed."""
    return expand(
        f"{RESULTS}/runs/{{device}}/bs{{batch_size}}/seed{{seed}}.json",
        device=DEVICES,
        batch_size=config["batch_sizes"],
        seed=config["seeds"],
    )


def calibration_files():
    return expand(f"{RESULTS}/calibration/{{device}}.json", device=DEVICES)


def expected_sha256(name):
    return config["mnist_sha256"].get(name, mnist.CANONICAL_SHA256[name])


def data_digest():
    """What the prepared MNIST holds, known before it exists: the verified
    files' SHA-256 and the validation split. It names the file training
    depends on (NPZ_DIGEST, below) and is recorded in every run, so that
    runs on other data are never compared."""
    digest = hashlib.sha256()
    for name in mnist.FILES:
        digest.update(f"{name}={expected_sha256(name)}\n".encode())
    digest.update(f"validation_size={config['validation_size']}".encode())
    return digest.hexdigest()[:16]


DATA_DIGEST = data_digest()


NPZ = "resources/mnist/mnist.npz"
# Training depends on this small file (written by prepare_mnist beside the
# npz), as ancient(), and reads the npz from the path in its params. So an
# npz deleted and made again identically reruns no training, even in the
# same invocation (Snakemake reruns the dependants of a regenerated input
# unless that input is ancient and exists). Its name carries the digest of
# the data's content, so other data (which prepare_mnist writes under
# another name, removing the old one) reruns every run.
NPZ_DIGEST = f"resources/mnist/mnist-{DATA_DIGEST}.sha256"


def device_spec(wildcards):
    return training_spec(wildcards.device)


def tensorflow_env(wildcards):
    """The conda environment of a timing job: the CUDA build on a GPU."""
    if DEVICES[wildcards.device]["type"] == "gpu":
        return "../../envs/tensorflow-gpu.yaml"
    return "../../envs/tensorflow.yaml"


def device_threads(wildcards):
    spec = DEVICES[wildcards.device]
    return spec["threads"] if spec["type"] == "cpu" else 1


def device_gpus(wildcards):
    """GPUs a job needs (a cluster executor turns this into --gpus)."""
    return 1 if DEVICES[wildcards.device]["type"] == "gpu" else 0


def device_gpu_model(wildcards):
    """The GPU model a cluster job must land on ('' = any)."""
    return DEVICES[wildcards.device].get("model", "")


def training_spec(label):
    """The device spec as training sees it: without the price, which is
    presentation only (changing it must not rerun training)."""
    return {k: v for k, v in DEVICES[label].items() if k != "price_per_hour"}


def training_params(wildcards):
    """Every hyperparameter of one run, so that changing any reruns it."""
    return {
        "device": wildcards.device,
        "device_spec": training_spec(wildcards.device),
        "batch_size": int(wildcards.batch_size),
        "seed": int(wildcards.seed),
        "epochs": config["epochs"],
        "warmup_epochs": config["warmup_epochs"],
        "learning_rate": config["learning_rate"],
        "adam": dict(config["adam"]),
        "input_pipeline": config["input_pipeline"],
        "deterministic": config["deterministic"],
        "train_samples": config["train_samples"],
        "step_samples": config["step_samples"],
        "steps_per_call": config["steps_per_call"],
    }


def device_prices():
    """price_per_hour by device label, where the config gives one."""
    return {
        label: spec["price_per_hour"]
        for label, spec in DEVICES.items()
        if "price_per_hour" in spec
    }


def figure_files(name):
    return expand(
        f"{RESULTS}/figures/{{name}}.{{ext}}",
        name=name,
        ext=config["figure"]["formats"],
    )


def imported_bundles():
    """{folder name: bundle path} for each results bundle in extra_runs:
    each is verified and unpacked into results/<experiment>/imported/."""
    out = {}
    for entry in config["extra_runs"]:
        if bundle.is_bundle(entry):
            path = Path(entry).resolve()
            stem = file_name_part(path.name[: -len(".tar.gz")])
            out[f"{stem}-{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"] = str(
                path
            )
    return out


IMPORTED = imported_bundles()


COPIED_RUNS = [f for f in config["extra_runs"] if not bundle.is_bundle(f)]
UNPACKED_BUNDLES = [f"{RESULTS}/imported/{name}" for name in IMPORTED]


def extra_run_folders():
    """Folders of other machines' runs: copied ones, and unpacked bundles."""
    return COPIED_RUNS + UNPACKED_BUNDLES


def extra_result_files():
    """Other machines' run records and calibrations, and the unpacked
    bundles (folders made by unpack_bundle), for the plan."""
    files = [
        f
        for d in COPIED_RUNS
        for f in records.run_files(d) + records.calibration_files(d)
    ]
    return [str(f) for f in files] + UNPACKED_BUNDLES


def bundle_path(wildcards):
    return IMPORTED[wildcards.name]


# Where and how this machine fetches MNIST: they matter only to the
# download (never rerun once a file is verified), so no later job takes them
# as a param, and a mirror URL with a password never reaches a report.
MACHINE_LOCAL = ("mirrors", "download_timeout", "download_retries", "download_deadline")


def report_config():
    """The configuration as the report and the bundle show it: resolved
    devices included, machine-local download settings left out."""
    shown = {
        k: v
        for k, v in config.items()
        if not k.startswith("_") and k not in MACHINE_LOCAL
    }
    return shown | {"devices_auto": bool(config.get("_auto_devices"))}


def final_outputs():
    return [
        NPZ,  # so that a deleted npz is made again although training needs only its digest
        f"{RESULTS}/summary.csv",
        f"{RESULTS}/speedup.csv",
        f"{RESULTS}/time_to_accuracy.csv",
        f"{RESULTS}/report.md",
        *figure_files("speedup"),
        *figure_files("timeline"),
    ]
