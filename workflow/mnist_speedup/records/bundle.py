"""Results bundles: one machine's runs, carried to another machine, verified.

A bundle is a gzipped tar file holding ``manifest.json``, the run records
(``runs/<workload>/<device>/bs<batch>/seed<seed>.json``) and the calibrations
(``calibration/<workload>/<device>.json``) of one experiment on one machine. The
manifest lists every file with its SHA-256 and size, the host and its
machine id, the experiment's config, the software versions, the digest of
the training code and the bundle's schema version.

:func:`unpack` trusts nothing in a bundle: it reads members one by one and
refuses links, devices, absolute paths, ``..``, names outside the layout
above, members over a size limit, more bytes in all than a limit, files the
manifest does not list, files it lists that are missing, and any file whose
content differs from its manifest entry. It writes into a hidden temporary
folder and renames that into place only when everything checked out, so a
refused bundle leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import shutil
import tarfile
import tempfile
from pathlib import Path

from mnist_speedup import atomic
from mnist_speedup.records import calibration, tarheaders
from mnist_speedup.records import run_record as records
from mnist_speedup.spec import frameworks, run

#: 2: runs and calibrations under runs/<workload>/ and calibration/<workload>/ (1: the MLP only)
SCHEMA_VERSION = 2
#: what each earlier bundle version lacked
OLDER = {1: "it was made before workloads (its runs are the MLP's only, in the old runs/<device>/ layout)"}
MANIFEST = "manifest.json"
#: a run record or calibration is a few tens of kB; nothing honest is near these
MAX_MEMBER_BYTES = 8 * 2**20
MAX_TOTAL_BYTES = 256 * 2**20
MAX_MEMBERS = 20_000
_MEMBER = re.compile(rf"({run.RUN_REGEX}|{calibration.REGEX})\Z")


class BundleError(ValueError):
    pass


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def bundle_files(results_dir) -> list[Path]:
    """The files of one experiment's results that travel."""
    return run.run_files(results_dir) + calibration.files(results_dir)


#: the machine's fields a manifest names beside each framework's own software
MACHINE_SOFTWARE = ("python", "numpy", "os", "cpu_model", "gpu_name")


def software(environments: list[dict]) -> dict:
    """The manifest's software: the machine's fields and the software each framework in the runs
    declares (spec/frameworks.py), the first value recorded of each."""
    declared = frameworks.declarations()
    used = {env.get("framework") or frameworks.DEFAULT for env in environments}
    fields = [*MACHINE_SOFTWARE, *(f for name in sorted(used & declared.keys()) for f in declared[name].software)]
    out = {}
    for field in dict.fromkeys(fields):
        values = [env[field] for env in environments if env.get(field) is not None]
        out[field] = values[0] if values else None
    return out


def manifest(results_dir, files, *, host, machine_id, experiment, config, software, training_code) -> dict:
    results_dir = Path(results_dir)
    listed = {}
    for path in files:
        data = Path(path).read_bytes()
        listed[Path(path).relative_to(results_dir).as_posix()] = {"sha256": _sha256(data), "bytes": len(data)}
    return {
        "bundle_schema_version": SCHEMA_VERSION,
        "host": host,
        "machine_id": machine_id,
        "experiment": experiment,
        "config": config,
        "software": software,
        "training_code": training_code,
        "files": dict(sorted(listed.items())),
    }


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tar.addfile(info, io.BytesIO(data))


def write(dest, results_dir, meta: dict) -> None:
    """Write the bundle atomically: the manifest first, then every file."""
    results_dir = Path(results_dir)
    with atomic.replacing(dest) as tmp:
        with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as tar:
            _add(tar, MANIFEST, (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode())
            for name in meta["files"]:
                _add(tar, name, (results_dir / name).read_bytes())


# ------------------------------------------------------------ unpacking


def _refuse(bundle, problem: str, fix: str = "ask for a fresh bundle (snakemake --cores 1 bundle on that machine)"):
    return BundleError(f"bundle {bundle}: {problem}. Nothing from it was used. Fix: {fix}.")


def _check_member(bundle, info: tarfile.TarInfo, total: int) -> None:
    name = info.name
    if name.startswith("/") or "\\" in name or ".." in name.split("/"):
        raise _refuse(bundle, f"member {name!r} points outside the bundle (an absolute path or `..`)")
    if not info.isfile():
        raise _refuse(bundle, f"member {name!r} is a link or special file, not a plain file")
    if info.size > MAX_MEMBER_BYTES:
        raise _refuse(bundle, f"member {name!r} is {info.size} bytes, over the {MAX_MEMBER_BYTES}-byte limit")
    if total + info.size > MAX_TOTAL_BYTES:
        raise _refuse(bundle, f"it unpacks to more than {MAX_TOTAL_BYTES} bytes")


def _read(bundle, tar: tarfile.TarFile, info: tarfile.TarInfo) -> bytes:
    data = tar.extractfile(info).read(MAX_MEMBER_BYTES + 1)
    if len(data) != info.size:
        raise _refuse(bundle, f"member {info.name!r} is truncated")
    return data


def _members(bundle) -> dict[str, bytes]:
    """Every member's content, checked for shape and size as it is read."""
    out, total = {}, 0
    try:  # every header from its raw bytes first: tarfile decodes a header's whole payload in memory
        tarheaders.scan(bundle, MAX_MEMBER_BYTES, 2 * MAX_MEMBERS + 1)
    except tarheaders.HeaderError as exc:
        raise _refuse(bundle, str(exc)) from None
    try:
        with tarfile.open(bundle, "r:gz") as tar:
            for count, info in enumerate(tar, start=1):
                if count > MAX_MEMBERS:
                    raise _refuse(bundle, f"it has more than {MAX_MEMBERS} members")
                _check_member(bundle, info, total)
                if info.name in out:
                    raise _refuse(bundle, f"member {info.name!r} appears twice")
                out[info.name] = _read(bundle, tar, info)
                total += info.size
    except BundleError:
        raise
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        problem = f"it is not a readable .tar.gz ({type(exc).__name__}: {exc}); it is truncated or damaged"
        raise _refuse(bundle, problem) from None
    return out


def _manifest(bundle, members: dict[str, bytes]) -> dict:
    if MANIFEST not in members:
        raise _refuse(bundle, f"it has no {MANIFEST}")
    try:
        meta = records.parse(members[MANIFEST].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _refuse(bundle, f"{MANIFEST} is not valid JSON ({exc})") from None
    version = meta.get("bundle_schema_version") if isinstance(meta, dict) else None
    if version != SCHEMA_VERSION:
        raise _refuse(
            bundle,
            f"bundle_schema_version {version!r} is not the version this workflow reads ({SCHEMA_VERSION})"
            + (f": {OLDER[version]}" if version in OLDER else ""),
            "make the bundle again with this version of the workflow, or merge it with the version that made it",
        )
    if not isinstance(meta.get("files"), dict):
        raise _refuse(bundle, f"{MANIFEST} has no list of files")
    return meta


def verify(bundle, members: dict[str, bytes], meta: dict) -> None:
    """Every file present, listed, and exactly as the manifest says."""
    listed, present = set(meta["files"]), set(members) - {MANIFEST}
    for name in sorted(present - listed):
        raise _refuse(bundle, f"file {name!r} is not listed in its manifest (added after the bundle was made)")
    for name in sorted(listed - present):
        raise _refuse(bundle, f"file {name!r} is listed in its manifest but missing (an incomplete copy)")
    for name in sorted(listed):
        entry = meta["files"][name]
        if not isinstance(entry, dict) or entry.get("sha256") != _sha256(members[name]):
            raise _refuse(bundle, f"file {name!r} does not match its SHA-256 in the manifest (edited or damaged)")
        if entry.get("bytes") != len(members[name]):
            raise _refuse(
                bundle,
                f"file {name!r} is {len(members[name])} bytes, but the manifest says "
                f"{entry.get('bytes')!r} (edited or damaged)",
            )
        _check_host(bundle, name, members[name], meta.get("host"))


def _check_host(bundle, name: str, data: bytes, host) -> None:
    try:
        made_on = records.parse(data.decode("utf-8"))["environment"]["hostname"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise _refuse(bundle, f"file {name!r} is not a record of this workflow") from None
    if made_on != host:
        raise _refuse(bundle, f"file {name!r} was made on {made_on!r}, but the manifest says {host!r}")


def _verified(bundle) -> tuple[dict[str, bytes], dict]:
    """The members and manifest of ``bundle``, every check passed. The
    manifest's version is checked before the members' names, so that a
    bundle of an earlier version gets its own message."""
    members = _members(bundle)
    meta = _manifest(bundle, members)
    for name in members:
        if name != MANIFEST and not _MEMBER.match(name):
            raise _refuse(bundle, f"member {name!r} is not a run record or calibration of this workflow")
    verify(bundle, members, meta)
    return members, meta


def check(bundle) -> dict:
    """Verify ``bundle`` without unpacking it; returns its manifest."""
    return _verified(bundle)[1]


def unpack(bundle, dest) -> dict:
    """Verify ``bundle`` (again) and unpack it into the folder ``dest``
    (which it replaces). Returns the manifest."""
    dest = Path(dest)
    members, meta = _verified(bundle)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent))
    try:
        for name, data in members.items():
            target = tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_bytes(target, data)
        tmp.chmod(0o777 & ~atomic.current_umask())
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(dest)
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return meta


def is_bundle(path) -> bool:
    return str(path).endswith(".tar.gz")


#: the note an imported folder holds instead of runs where its bundle was left out (scripts/verify_bundle.py)
DROPPED = "DROPPED.json"


def write_dropped(dest, bundle_name: str, reason: str) -> None:
    """``dest`` as the unpacked folder of a bundle left out, holding only why."""
    Path(dest).mkdir(parents=True, exist_ok=True)
    (Path(dest) / DROPPED).write_text(json.dumps({"bundle": bundle_name, "reason": reason}, indent=1) + "\n")


def dropped(folders) -> list[dict]:
    """The bundles left out among the ``extra_runs`` folders: each {bundle, reason}."""
    out = []
    for folder in folders:
        note = Path(folder) / DROPPED
        if note.is_file():
            data = json.loads(note.read_text(encoding="utf-8"))
            out.append({"bundle": str(data.get("bundle")), "reason": str(data.get("reason"))})
    return out
