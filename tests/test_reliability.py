"""Issue 18: what an adversarial trial broke, each case with its new behaviour."""

import copy
import json
import re

import pytest

from conftest import ROOT, copy_workflow, snakemake, tiny_config, write_config
from crafted import make_record
from mnist_speedup.config import parse as config_check
from mnist_speedup.records import run_record as records
from mnist_speedup.records import seal
from mnist_speedup.spec import devices, run

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
BASE = {
    "mirrors": ["/data/mnist"],
    "devices": {"cpu": {"type": "cpu", "threads": 2}, "cpu1": {"type": "cpu", "threads": 1}},
    "baseline": "cpu",
    "seeds": [1, 2],
    "batch_sizes": [100, 500],
    "epochs": 3,
}


def parsed(**changes) -> dict:
    config = copy.deepcopy(BASE) | changes
    return config_check.parse(config, None, SCHEMA, gpus=[])


def refused(**changes) -> str:
    with pytest.raises(config_check.ConfigError) as err:
        parsed(**changes)
    assert "Fix:" in str(err.value)
    return str(err.value)


# ------------------------------------------------------------ 1. free text reaches the HTML report


@pytest.mark.parametrize(
    "changes",
    [
        {"currency": "</script><script>alert(1)</script>"},
        {"figure": {"title": "</script><script>alert(1)</script>"}},
        {"extra_runs": ["/data/</script>"]},
        {"mirrors": ["https://host/</script>"]},
        {"experiment": "</script>"},
    ],
)
def test_free_text_that_could_end_a_script_element_is_refused(changes):
    assert "config key" in refused(**changes)


# ------------------------------------------------------------ 4, 5. whole floats and key order rerun nothing


def test_whole_number_floats_become_integers_before_any_param():
    config = parsed(epochs=2.0, train_samples=2000.0, download_retries=2.0)
    assert (config["epochs"], config["train_samples"], config["download_retries"]) == (2, 2000, 2)
    assert all(type(config[k]) is int for k in ("epochs", "train_samples", "download_retries"))
    text = config_check.prepare({**BASE, "train_samples": "1e3"}, {"train_samples": "1e3"}, SCHEMA)
    assert text["train_samples"] == 1000 and type(text["train_samples"]) is int


def test_a_fraction_where_a_whole_number_is_due_is_refused():
    assert "2.5 must be a whole number" in refused(epochs=2.5)


def test_params_do_not_depend_on_key_order():
    one = parsed(adam={"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-8})
    other = parsed(
        adam={"epsilon": 1e-8, "beta_2": 0.999, "beta_1": 0.9},
        devices={"cpu1": {"threads": 1, "type": "cpu"}, "cpu": {"threads": 2, "type": "cpu"}},
    )
    a = run.RunSpec.from_config(one, "mlp", "cpu1", one["devices"]["cpu1"], 100, 1).params()
    b = run.RunSpec.from_config(other, "mlp", "cpu1", other["devices"]["cpu1"], 100, 1).params()
    assert repr(a) == repr(b)  # Snakemake compares params as text


# ------------------------------------------------------------ 6, 9, 10. bounds at parse time


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"figure": {"width_in": 1000, "height_in": 1000}}, "figure.width_in"),
        ({"figure": {"width_in": 25, "dpi": 1200}}, "figure.width_in"),
        ({"calibration": {"square_size": 100000}}, "calibration.square_size"),
        ({"step_samples": 1e9}, "step_samples"),
        ({"adam": {"beta_1": 5}}, "adam.beta_1"),
        ({"adam": {"beta_2": 1.0}}, "adam.beta_2"),
        ({"adam": {"epsilon": -1}}, "adam.epsilon"),
        ({"learning_rate": -1}, "learning_rate"),
        ({"devices": {}}, "devices"),
    ],
)
def test_unbounded_or_impossible_values_are_refused_at_parse_time(changes, key):
    assert f"config key `{key}`" in refused(**changes)


def test_an_empty_devices_mapping_in_a_file_is_not_silently_auto(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("seeds: [1]\ndevices: {}\n")
    with pytest.raises(config_check.ConfigError, match="would silently become `auto`"):
        config_check.check_files([path])


def test_a_key_written_twice_in_a_config_file_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("epochs: 3\nseeds: [1]\nepochs: 5\n")
    with pytest.raises(config_check.ConfigError, match=r"config key `epochs` is written twice .*line 3"):
        config_check.check_files([path])


# ------------------------------------------------------------ 11. messages that name the key and the fix


@pytest.mark.parametrize(
    "changes, fragment",
    [
        ({"baseline": 1060}, "--config \"baseline='1060'\""),
        ({"currency": 123}, "--config \"currency='USD'\""),
        ({"experiment": 7}, "--config \"experiment='007'\""),
        ({"devices": {"a" * 30: {"type": "cpu", "threads": 1}}, "baseline": "a" * 30}, "repeated over and over"),
    ],
)
def test_unclear_inputs_get_a_message_with_the_fix(changes, fragment):
    assert fragment in refused(**changes)


# ------------------------------------------------------------ 7. a record against its place and physics


def _write(tmp_path, record, device=None, batch_size=None, seed=None):
    path = run.run_path(
        tmp_path,
        record["workload"],
        device or record["device"],
        batch_size or record["batch_size"],
        seed or record["seed"],
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(seal.seal(record)))
    return path


@pytest.mark.parametrize(
    "place, key",
    [({"batch_size": 500}, "batch_size"), ({"device": "cpu1"}, "device"), ({"seed": 9}, "seed")],
)
def test_a_record_must_agree_with_its_folder(tmp_path, place, key):
    path = _write(tmp_path, make_record("cpu", 100, 1), **place)
    with pytest.raises(records.RecordError, match=rf"says {key} .* but lies in the folder of {key}.*Fix: move it back"):
        records.load(path)


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"samples_per_epoch": 200_000_000, "steps_per_epoch": 2_000_000}, "samples_per_epoch"),
        ({"energy": {"joules_per_epoch": -50.0}}, "energy.joules_per_epoch"),
        ({"memory": {"host_peak_rss_bytes": -1}}, "memory.host_peak_rss_bytes"),
        ({"lock_wait_s": -3.0}, "lock_wait_s"),
        ({"host_overhead": {"one_call_step_s": -0.01}}, "host_overhead.one_call_step_s"),
        ({"started_at": "yesterday-ish"}, "started_at"),
    ],
)
def test_every_measured_quantity_lies_in_its_physical_range(tmp_path, changes, field):
    record = make_record("cpu", 100, 1, **changes)
    if "samples_per_epoch" in changes:  # consistent otherwise, so only the range can refuse it
        mean = sum(record["timing"]["epoch_s"][1:]) / 2
        record["timing"]["samples_per_s"] = changes["samples_per_epoch"] / mean
    with pytest.raises(records.RecordError, match=rf"`{field}`.*Fix:"):
        records.load(_write(tmp_path, record))


@pytest.mark.parametrize(
    "content, fragment",
    [(b"[1, 2]", "is a JSON list"), (b"\xff\xfe\x00binary", "is not text"), (b'{"hello": 1}', "not a run record")],
)
def test_files_that_are_not_records_are_named_with_a_fix(tmp_path, content, fragment):
    path = run.run_path(tmp_path, "mlp", "cpu", 100, 1)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(records.RecordError, match=rf"{fragment}.*Fix:"):
        records.load(path)


# ------------------------------------------------------------ 12. GPU jobs ask the cluster for a GPU


def test_gpu_devices_ask_for_a_gpu_and_cpu_devices_for_none():
    assert devices.cluster_resource({"type": "gpu", "index": 0, "model": "h100"}, "gpu") == 1
    assert devices.cluster_resource({"type": "gpu", "index": 0, "model": "h100"}, "gpu_model") == "h100"
    assert devices.cluster_resource({"type": "gpu", "index": 0}, "gpu_model") == ""
    assert devices.cluster_resource({"type": "cpu", "threads": 2}, "gpu") == 0


@pytest.mark.slow
def test_the_plan_gives_gpu_jobs_their_gpu_resources(tmp_path, mirror):
    workdir = copy_workflow(tmp_path / "wf")
    gpus = {"cpu": {"type": "cpu", "threads": 1}, "gpu": {"type": "gpu", "index": 0, "model": "h100"}}
    cfg = write_config(workdir, tiny_config(*mirror, devices=gpus, seeds=[1]))
    out = snakemake(workdir, "-n", "--cores", "2", "--configfile", str(cfg)).stdout
    blocks = [b for b in out.split("\n\n") if "rule train:" in b or "rule calibrate:" in b]
    gpu_jobs = [b for b in blocks if "device=gpu" in b or "calibration/mlp/gpu.json" in b]
    cpu_jobs = [b for b in blocks if b not in gpu_jobs]
    assert gpu_jobs and cpu_jobs
    assert all("gpu=1" in b and "gpu_model=h100" in b for b in gpu_jobs)
    assert all("gpu=0" in b and "gpu_model=h100" not in b for b in cpu_jobs)


# ------------------------------------------------------------ 8. a refused input deletes nothing: see
# test_workflow.py (test_zz_a_refused_record_..., and the bundle replaced in place)


# ------------------------------------------------------------ 2. passwords in mirror URLs


@pytest.mark.parametrize("password", ["pw@ss", "Space Pw3", "Hash#Pw1", "Slash/Pw2", "Query?Pw4"])
def test_a_password_that_breaks_the_url_is_refused_at_parse_time_and_masked(password):
    from urllib.parse import quote

    message = refused(mirrors=[f"https://alice:{password}@host.example/mnist/"])
    assert "~/.netrc" in message
    pieces = [p for p in re.split(r"[@#/? ]", password) if len(p) >= 4]
    for shown in {password, quote(password, safe=""), quote(password), *pieces}:
        assert shown not in message, shown


@pytest.mark.parametrize("password", ["pw@ss", "Space Pw3", "Hash#Pw1", "Slash/Pw2", "Query?Pw4", "plain"])
def test_every_form_of_a_password_is_masked_in_logged_text(password):
    from urllib.parse import quote

    from mnist_speedup.data import urls

    url = f"https://alice:{password}@host/mnist/?token=abc123"
    logged = f"{url} failed: InvalidURL {quote(password)} {quote(password, safe='')} {password.split('#')[0]}"
    masked = urls.mask_text(logged, url)
    for secret in {password, quote(password), quote(password, safe=""), "abc123"}:
        assert secret not in masked
    assert urls.mask_url(url).startswith("https://alice:***@host/mnist/") and "token=***" in urls.mask_url(url)


def test_a_single_device_report_says_what_it_can_and_cannot_tell(tmp_path):

    from crafted import crafted_tables, report_tables
    from mnist_speedup.report import markdown

    summary, speedup, table, _ = crafted_tables(tmp_path, [make_record("cpu", 100, s) for s in (1, 2, 3)])
    tables = report_tables(summary, speedup, table, "cpu", 0.95)
    text = markdown.render(markdown.Report(tables, "cpu", {}, {"speedup": [], "timeline": []}, {}))
    assert "**Only cpu (2 threads) was run, so there is no speedup" in text
    assert "3 runs on 1 device." in text and "1 devices" not in text


def _resources(block: str) -> dict:
    line = next(x for x in block.splitlines() if x.strip().startswith("resources:"))
    pairs = (p.split("=", 1) for p in line.split(":", 1)[1].split(", "))
    return {k.strip(): (int(v) if v.isdigit() else v) for k, v in pairs}


@pytest.mark.slow
def test_the_slurm_executor_turns_the_plan_into_a_gpu_request(tmp_path, mirror):
    """The flags the Slurm executor's own code puts on the sbatch line, from
    the resources of the planned jobs (no cluster needed)."""
    import types

    from snakemake_executor_plugin_slurm.utils import set_gres_string

    class Resources(dict):
        __getattr__ = dict.__getitem__

    workdir = copy_workflow(tmp_path / "wf")
    gpus = {
        "cpu": {"type": "cpu", "threads": 1},
        "gpu": {"type": "gpu", "index": 0, "model": "h100"},
        "any": {"type": "gpu", "index": 0},
    }
    cfg = write_config(workdir, tiny_config(*mirror, devices=gpus, seeds=[1]))
    out = snakemake(workdir, "-n", "--cores", "2", "--configfile", str(cfg)).stdout
    flags = {}
    for block in out.split("\n\n"):
        if "rule train:" in block:
            device = block.split("device=")[1].split(",")[0]
            flags[device] = set_gres_string(types.SimpleNamespace(resources=Resources(_resources(block)))).strip()
    assert flags == {"gpu": "--gpus=h100:1", "any": "--gpus=1", "cpu": ""}


# ------------------------------------------------------------ 1. the HTML report holds only Snakemake's scripts


SNAKEMAKE_REPORT_SCRIPTS = [
    "workflow-desc",
    "results",
    "categories",
    "rulegraph",
    "runtimes",
    "timeline",
    "rules",
    "packages",
    "metadata",
    "logo",
]


@pytest.mark.slow
def test_config_text_never_adds_or_cuts_a_script_element_of_the_html_report(tmp_path, mirror):
    from html.parser import HTMLParser

    class Scripts(HTMLParser):
        def __init__(self):
            super().__init__()
            self.found, self._open = [], None

        def handle_starttag(self, tag, attrs):
            if tag == "script":
                self._open = [dict(attrs), ""]

        def handle_data(self, data):
            if self._open is not None:
                self._open[1] += data

        def handle_endtag(self, tag):
            if tag == "script" and self._open is not None:
                self.found.append(tuple(self._open))
                self._open = None

    def scripts(workdir):
        html = (workdir / "results" / "default" / "report.html").read_text(errors="replace")
        parser = Scripts()
        parser.feed(html)
        return parser.found

    def made(name, **changes):
        workdir = copy_workflow(tmp_path / name)
        # one device and one seed: the report's pages are all there, and training is not what is tested
        one = {"devices": {"cpu": {"type": "cpu", "threads": 2, "framework": "jax"}}, "seeds": [1]}
        cfg = write_config(workdir, tiny_config(*mirror, epochs=2, **one, **changes))
        snakemake(workdir, "--cores", "2", "--configfile", str(cfg))
        snakemake(workdir, "--cores", "1", "--configfile", str(cfg), "--report", "results/default/report.html")
        return scripts(workdir)

    tricky = made("tricky", currency="€", figure={"title": "CPU & GPU's 'speed' / $ per hour; (a)+(b)", "dpi": 100})
    # the script elements Snakemake 9.27.1 (pinned) writes: 33 without attributes and these ten
    assert sum(1 for attrs, _ in tricky if not attrs) == 33 and len(tricky) == 43
    assert [a["id"] for a, _ in tricky if a] == SNAKEMAKE_REPORT_SCRIPTS
    data = {attrs["id"]: body for attrs, body in tricky if "id" in attrs}
    assert {"results", "rules", "workflow-desc"} <= set(data)  # the results, the rules' params, our first page
    for name in ("results", "rules", "categories", "metadata"):
        value = re.fullmatch(r"\s*var \w+ = (.*);\s*", data[name], re.S)
        json.loads(value[1])  # each data script is whole JSON: nothing in it cut it off
    assert any("CPU & GPU's 'speed'" in body for _, body in tricky)  # the tricky text did reach the report
