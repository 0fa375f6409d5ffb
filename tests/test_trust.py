"""Reliability 6 (1): the allowed-signers file decides on every call. A bundle whose key was removed (or that
no trusted key signed) is left out, not merged and not fatal: its unpacked folder holds only why, and the
report's warnings name it. The rule scripts run as Snakemake runs them (a `snakemake` object, a process each)."""

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT
from crafted import meta_for, results_folder
from mnist_speedup.analysis import checks
from mnist_speedup.records import bundle, signing

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen")
SCRIPTS = ROOT / "workflow" / "scripts"


def run_script(name: str, **job) -> subprocess.CompletedProcess:
    """``workflow/scripts/<name>`` with a stand-in for Snakemake's ``snakemake`` object."""
    code = textwrap.dedent(f"""
        import runpy, types

        class Named(types.SimpleNamespace):  # by name and by place, as Snakemake's
            def __getitem__(self, i):
                return list(vars(self).values())[i]

        job = {job!r}
        snakemake = types.SimpleNamespace(
            input=Named(**job["input"]), output=Named(**job["output"]), params=Named(**job.get("params", {{}})),
            wildcards=Named(**job.get("wildcards", {{}})), log=[job["log"]], rule={name!r}, scriptdir={str(SCRIPTS)!r})
        runpy.run_path({str(SCRIPTS / name)!r}, init_globals={{"snakemake": snakemake}})
    """)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_a_bundle_whose_key_was_removed_is_left_out_and_named(tmp_path):
    """Planted once: verify_bundle without its SignatureError branch failed the call instead."""
    folder = results_folder(tmp_path)
    given = tmp_path / "bundle-box.tar.gz"
    bundle.write(given, folder, meta_for(folder))
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "lab")], check=True)
    signing.sign(given, tmp_path / "lab")
    allowed = tmp_path / "allowed_signers"
    allowed.write_text("# the lab's key was removed here\n")
    logs = tmp_path / "logs"
    verified = {"verified": str(logs / "box.verified.json"), "bundle": str(logs / "box.verified.tar.gz")}
    proc = run_script(
        "verify_bundle.py",
        input={"given": str(given)},
        output=verified,
        params={"trusted_keys": str(allowed)},
        log=str(logs / "verify.log"),
    )
    assert proc.returncode == 0, proc.stderr
    note = json.loads((logs / "box.verified.json").read_text())
    assert "is signed by a key that" in note["dropped"] and str(given) in note["dropped"]
    assert (logs / "box.verified.tar.gz").read_bytes() == b""  # nothing of it is kept
    unpacked = tmp_path / "imported" / "box"
    proc = run_script(
        "unpack_bundle.py", input=verified, output={"folder": str(unpacked)}, wildcards={"name": "box"},
        log=str(logs / "unpack.log"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in unpacked.iterdir()] == [bundle.DROPPED]
    (warning,) = checks.dropped_bundles(bundle.dropped([unpacked, tmp_path]))
    assert warning.startswith("Left out bundle box: none of its runs is in this report.") and "Fix:" in warning
