# Configuration validation, device resolution and input functions.
import hashlib
import json
import os
import re
import socket
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

# Every path from this file's own location, so that the workflow also runs
# as a module of another workflow (whose working directory is elsewhere).
WORKFLOW_DIR = Path(workflow.current_basedir).resolve().parent
sys.path.insert(0, str(WORKFLOW_DIR))

from mnist_speedup import codedigest  # noqa: E402
from mnist_speedup.analysis import replication, stats  # noqa: E402
from mnist_speedup.config import design  # noqa: E402
from mnist_speedup.config import parse as config_check  # noqa: E402
from mnist_speedup.config import sources as configinput  # noqa: E402
from mnist_speedup.data import mnist  # noqa: E402
from mnist_speedup.spec import devices as device_info  # noqa: E402
from mnist_speedup.measure import budget, invocation  # noqa: E402
from mnist_speedup.spec import run  # noqa: E402
from mnist_speedup.records import attempts, bundle, calibration  # noqa: E402

# the catalogue's place, relative to this rule file
SCHEMA = Path(workflow.current_basedir).resolve() / "../schemas/config.schema.yaml"
try:
    # --config values arrive as text; coerce, check in our words, then let
    # the schema fill in the defaults and check how the keys fit together
    config_check.parse(
        config,
        workflow.config_settings.config,
        SCHEMA,
        config_files=[WORKFLOW_DIR.parent / "config" / "config.yaml"]
        + list(workflow.config_settings.configfiles),
    )
except config_check.ConfigError as exc:
    raise WorkflowError(f"Invalid configuration: {exc}") from None


onstart:
    # the executor is known only once the plan is made (Snakemake parses the
    # Snakefile first); a cluster's jobs run with --no-hooks, so this runs
    # on the submit host only, before any job, and never in a dry run
    try:
        config_check.check_executor(config, workflow.local_exec)
    except config_check.ConfigError as exc:
        raise WorkflowError(f"Invalid configuration: {exc}") from None
    invocation.write(INVOCATION, this_invocation())


for warning in config.get("_warnings", []):
    logger.warning(f"WARNING: {warning}")
DEVICES = config["devices"]
WORKLOADS = config["workloads"]
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
SCRIPTS = WORKFLOW_DIR / "scripts"


def stage_digest(script, *also):
    """The digest of the package code a stage's rule script imports (and of
    any other files it reads), passed as a param: changing that code reruns
    exactly that stage's jobs, and nothing when the README or tests change."""
    digest = hashlib.sha256(codedigest.digest(SCRIPTS / script).encode())
    for path in also:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


TRAINING_CODE_DIGEST = stage_digest("train.py")
CALIBRATION_CODE_DIGEST = stage_digest("calibrate.py")
AGGREGATE_CODE_DIGEST = stage_digest("aggregate.py")
FIGURE_CODE_DIGEST = stage_digest("figure.py")
# the report also reads the figure captions' words from their .rst files
REPORT_CODE_DIGEST = stage_digest(
    "report.py", *sorted((WORKFLOW_DIR / "report").glob("*.rst"))
)


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
    workload=device_info.LABEL_PATTERN,
    device=device_info.LABEL_PATTERN,
    batch_size=r"[1-9][0-9]*",
    seed=r"[0-9]+",
    round=r"[0-9]+",


# Randomised complete blocks (mnist_speedup/config/design.py), as job priorities:
# with one timing_slot, jobs run one at a time in exactly this order.
REPLICATION = config.get("replication")
# the speedups' interval, named at its level (wider under replication's stopping rule)
SPEEDUP_INTERVAL = stats.ci_name(
    replication.INTERVAL_LEVEL if REPLICATION else stats.CI_LEVEL
)
# every seed this config may run: the listed ones, and with replication the
# next ones up to max_seeds (their blocks come after the listed ones)
ALL_SEEDS = (
    replication.seeds_of_round(
        config["seeds"], REPLICATION["max_seeds"] - len(config["seeds"])
    )
    if REPLICATION
    else config["seeds"]
)
PRIORITIES = design.Priorities(
    DEVICES, config["batch_sizes"], ALL_SEEDS, WORKLOADS, next(iter(WORKLOADS))
)
# What this call's training jobs share (measure/invocation.py): written by
# the onstart handler below, on real runs only, never while parsing.
INVOCATION = f"{LOGS}/invocation.json"


def train_priority(wildcards):
    return PRIORITIES.train(
        wildcards.workload, wildcards.device, wildcards.batch_size, wildcards.seed
    )


def calibration_priority(wildcards):
    return PRIORITIES.calibration(wildcards.workload, wildcards.device)


def attempt_files_of(seeds):
    """This machine's run attempts (records/attempts.py) for every workload x device x batch size x ``seeds``."""
    return expand(
        f"{RESULTS}/{attempts.ATTEMPT_PATH}",
        workload=WORKLOADS,
        device=DEVICES,
        batch_size=config["batch_sizes"],
        seed=seeds,
    )


REPLICATION_ROUND = f"{RESULTS}/replication/round{{round}}.json"


def replication_decision():
    """Where replication stands (mnist_speedup/analysis/replication.py). Each round
    is measured by the checkpoint replication_round; a round not measured
    yet is an input of the jobs that read the decision, so its blocks run
    and it is measured first, and when that checkpoint finishes Snakemake
    evaluates their inputs again (the next round, or the stop). A missing
    round is a plain input rather than checkpoints.get()'s target: a
    checkpoint target does not make a finished job rerun when a tighter
    target asks for another round (Snakemake 9.27)."""

    def measurement(round_):
        path = Path(REPLICATION_ROUND.format(round=round_))
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    def exists(seeds):
        return all(Path(f).exists() for f in attempt_files_of(seeds))

    return replication.decide(
        config["seeds"],
        REPLICATION["ci_half_width"],
        REPLICATION["max_seeds"],
        measurement,
        exists,
    )


def attempt_files(wildcards=None):
    """The attempts of the runs the results use: the listed seeds, and with
    replication every round decided on so far (an input function, evaluated
    again each time a round's checkpoint finishes)."""
    if not REPLICATION:
        return attempt_files_of(config["seeds"])
    return attempt_files_of(replication_decision().seeds)


def replication_files(wildcards=None):
    """The round the decision stands at: the last measured one (for the
    report's stop reason), or the one to be measured next (so that the jobs
    reading the decision wait for it and are planned again after it)."""
    if not REPLICATION:
        return []
    return [REPLICATION_ROUND.format(round=replication_decision().rounds)]


def round_attempt_files(wildcards):
    """The attempts of the runs a replication round measures."""
    return attempt_files_of(
        replication.seeds_of_round(config["seeds"], int(wildcards.round))
    )


def this_invocation():
    """This call (measure/invocation.py): its process's start, its time
    budget, and the attempt file of every run the experiment may hold, in
    run order (with replication, an upper bound)."""
    order = sorted(PRIORITIES.order.items(), key=lambda item: item[1])
    plan = tuple(
        str(attempts.attempt_path(RESULTS, w, d, b, s)) for (w, d, b, s), _ in order
    )
    return invocation.Invocation(
        started_at=invocation.process_start(),
        budget_s=config["time_budget_s"],
        pid=os.getpid(),
        attempts=plan,
        at_most=bool(REPLICATION),
        known_runs=(
            () if config["time_budget_s"] is None else tuple(budget.known_runs(plan))
        ),
    )


def attempt_number(wildcards):
    """The training job's ``attempt`` param: a cut run's is one more than its
    last attempt's, so that it is planned again (records/attempts.py)."""
    return attempts.number_to_plan(
        attempts.attempt_path(RESULTS, **dict(wildcards.items()))
    )


def record_path(wildcards):
    return str(run.run_path(RESULTS, **dict(wildcards.items())))


def calibration_files():
    return expand(f"{RESULTS}/{calibration.PATH}", workload=WORKLOADS, device=DEVICES)


def workload_spec(wildcards):
    return WORKLOADS[wildcards.workload]


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
    return configinput.canonical(training_spec(wildcards.device))


def device_of(wildcards):
    return device_info.of(DEVICES[wildcards.device])


def tensorflow_env(wildcards):
    """The conda environment of a timing job (the CUDA build on a GPU)."""
    return device_of(wildcards).conda_env


def device_threads(wildcards):
    return device_of(wildcards).threads


def cluster_resource(name):
    """A resource of a timing job on a cluster: the GPU request of a GPU
    device (Snakemake's Slurm executor turns it into --gpus), none for others."""
    return lambda wildcards: device_info.cluster_resource(
        DEVICES[wildcards.device], name
    )


def training_spec(label):
    return run.training_device_spec(DEVICES[label])


def training_params(wildcards):
    """Every setting of one run (run.RunSpec), canonical, so that changing
    any value reruns it and reordering keys reruns nothing."""
    spec = run.RunSpec.from_config(
        config,
        wildcards.workload,
        wildcards.device,
        training_spec(wildcards.device),
        wildcards.batch_size,
        wildcards.seed,
    )
    return spec.params()


def device_prices():
    """price_per_hour by device label, where the config gives one."""
    return {
        label: spec["price_per_hour"]
        for label, spec in DEVICES.items()
        if "price_per_hour" in spec
    }


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
    files = [f for d in COPIED_RUNS for f in run.run_files(d) + calibration.files(d)]
    return [str(f) for f in files] + UNPACKED_BUNDLES


def file_sha256(path):
    """The SHA-256 of a file's content (None: no file named): read only."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None


def bundle_path(wildcards):
    return IMPORTED[wildcards.name]


def report_config():
    """The configuration as the report and the bundle show it (config/sources.py)."""
    return configinput.shown(config)
