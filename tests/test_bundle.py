"""Results bundles: made on one machine, verified and unpacked on another;
every kind of damaged or hostile bundle is refused and leaves nothing."""

import io
import json
import tarfile

import pytest

from crafted import make_record, meta_for, results_folder, write_records
from mnist_speedup.analysis import aggregate
from mnist_speedup.records import bundle


@pytest.fixture
def made(tmp_path):
    folder = results_folder(tmp_path)
    path = tmp_path / "bundle-box.tar.gz"
    bundle.write(path, folder, meta_for(folder))
    return path, folder


def members(path):
    with tarfile.open(path, "r:gz") as tar:
        return [(info, tar.extractfile(info).read() if info.isfile() else b"") for info in tar]


def rewrite(path, entries):
    """A new bundle from (TarInfo, data) pairs, as a tamperer would make it."""
    out = path.with_name("tampered.tar.gz")
    with tarfile.open(out, "w:gz") as tar:
        for info, data in entries:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return out


def test_round_trip_keeps_every_file_and_merges(made, tmp_path):
    path, folder = made
    meta = bundle.unpack(path, tmp_path / "unpacked")
    assert meta["host"] == "box" and meta["bundle_schema_version"] == bundle.SCHEMA_VERSION
    assert len(meta["files"]) == 6 + 2
    for name in meta["files"]:
        assert (tmp_path / "unpacked" / name).read_bytes() == (folder / name).read_bytes()
    local = write_records(tmp_path / "here", [make_record(d, 100, s) for d in ("cpu", "cpu1") for s in (1, 2, 3)])
    summary, _ = aggregate.load_runs(local, [tmp_path / "unpacked"], [])
    assert {"cpu@box", "cpu@h"} <= set(summary.device)


def _edited(entries):
    out = []
    for info, data in entries:
        if info.name.endswith("seed1.json") and "/cpu/" in info.name:
            data = data.replace(b'"test_accuracy": 0.91', b'"test_accuracy": 0.99')
        out.append((info, data))
    return out


def _extra(entries):
    info = tarfile.TarInfo("runs/mlp/cpu/bs100/seed7.json")
    return entries + [(info, entries[1][1])]


def _traversal(entries):
    info = tarfile.TarInfo("../../evil.json")
    return entries + [(info, b"{}")]


def _absolute(entries):
    info = tarfile.TarInfo("/tmp/evil.json")
    return entries + [(info, b"{}")]


def _symlink(entries):
    info = tarfile.TarInfo("runs/mlp/cpu/bs100/seed8.json")
    info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
    return entries + [(info, b"")]


def _oversized(entries):
    info = tarfile.TarInfo("runs/mlp/cpu/bs100/seed9.json")
    return entries + [(info, b" " * (bundle.MAX_MEMBER_BYTES + 1))]


def _backslash(entries):
    """A Windows-style path: `..\\` is not caught by splitting on `/`."""
    return entries + [(tarfile.TarInfo("runs\\..\\..\\evil.json"), b"{}")]


def _other_schema(entries):
    meta = json.loads(entries[0][1])
    meta["bundle_schema_version"] = 99
    return [(entries[0][0], json.dumps(meta).encode())] + entries[1:]


def _version_one(entries):
    """A bundle as the version before workloads made it: schema 1, runs/<device>/... (issue 31 (11))."""
    meta = json.loads(entries[0][1])
    meta["bundle_schema_version"] = 1
    old = [
        (tarfile.TarInfo(i.name.replace("runs/mlp/", "runs/").replace("calibration/mlp/", "calibration/")), d)
        for i, d in entries[1:]
    ]
    return [(entries[0][0], json.dumps(meta).encode())] + old


def _stranger(entries):
    return entries + [(tarfile.TarInfo("notes/readme.json"), b"{}")]


def _no_file_list(entries):
    meta = json.loads(entries[0][1])
    del meta["files"]
    return [(entries[0][0], json.dumps(meta).encode())] + entries[1:]


def _wrong_size(entries):
    """Issue 40.4: the manifest's sizes were never read."""
    meta = json.loads(entries[0][1])
    name = next(iter(meta["files"]))
    meta["files"][name]["bytes"] += 1
    return [(entries[0][0], json.dumps(meta).encode())] + entries[1:]


def _deep_manifest(entries):
    """Reliability 6 (5): brackets nested past Python's limit gave a RecursionError naming nothing."""
    return [(entries[0][0], b"[" * 100_000 + b"]" * 100_000)] + entries[1:]


@pytest.mark.parametrize(
    "change, fragment",
    [
        (_deep_manifest, "manifest.json is not valid JSON (it is JSON nested deeper than Python reads"),
        (_edited, "does not match its SHA-256 in the manifest (edited or damaged)"),
        (_wrong_size, "bytes, but the manifest says"),
        (lambda e: [x for x in e if not x[0].name.endswith("cpu1.json")], "listed in its manifest but missing"),
        (_extra, "'runs/mlp/cpu/bs100/seed7.json' is not listed in its manifest"),
        (_traversal, "points outside the bundle"),
        (_absolute, "points outside the bundle"),
        (_backslash, "points outside the bundle"),  # a survivor of the 2026-12-05 mutation run
        (_symlink, "is a link or special file"),
        (_oversized, "over the 8388608-byte limit"),
        (_other_schema, "bundle_schema_version 99 is not the version this workflow reads (2)"),
        # planted once: the members' names checked before the manifest's version gave "member
        # 'calibration/cpu.json' is not a run record or calibration" for a version-1 bundle
        (_version_one, "bundle_schema_version 1 is not the version this workflow reads (2): it was made before"),
        (_stranger, "member 'notes/readme.json' is not a run record or calibration of this workflow"),
        (lambda e: e[1:], "it has no manifest.json"),
        (lambda e: e + [e[1]], "appears twice"),
        (_no_file_list, "manifest.json has no list of files"),
    ],
)
def test_a_bad_bundle_is_refused_and_leaves_nothing(made, tmp_path, change, fragment):
    path, _ = made
    bad = rewrite(path, change(members(path)))
    dest = tmp_path / "unpacked"
    with pytest.raises(bundle.BundleError) as err:
        bundle.unpack(bad, dest)
    message = str(err.value)
    assert str(bad) in message and fragment in message and "Fix:" in message and "Nothing from it was used" in message
    assert not dest.exists() and not list(tmp_path.glob(".unpacked*"))


def test_a_truncated_bundle_is_refused(made, tmp_path):
    path, _ = made
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(bundle.BundleError, match="truncated or damaged") as err:
        bundle.unpack(cut, tmp_path / "unpacked")
    assert str(err.value).startswith(f"bundle {cut}: ")  # names the file it refused


def test_a_failed_unpack_keeps_the_earlier_good_one(made, tmp_path):
    path, _ = made
    dest = tmp_path / "unpacked"
    bundle.unpack(path, dest)
    before = sorted(p.relative_to(dest) for p in dest.rglob("*.json"))
    with pytest.raises(bundle.BundleError):
        bundle.unpack(rewrite(path, _edited(members(path))), dest)
    assert sorted(p.relative_to(dest) for p in dest.rglob("*.json")) == before


def test_a_record_from_another_host_than_the_manifest_says(tmp_path):
    folder = results_folder(tmp_path, host="box")
    path = tmp_path / "b.tar.gz"
    bundle.write(path, folder, meta_for(folder, host="elsewhere"))
    with pytest.raises(bundle.BundleError, match="was made on 'box', but the manifest says 'elsewhere'"):
        bundle.unpack(path, tmp_path / "unpacked")


def test_an_unpack_that_fails_while_writing_leaves_no_folder_behind(made, tmp_path, monkeypatch):
    """The half-written folder is hidden while it is written and removed on failure."""
    from mnist_speedup import atomic

    path, _ = made
    seen = []

    def failing(target, data):
        seen.append(target)
        raise OSError("disk went away")

    monkeypatch.setattr(atomic, "write_bytes", failing)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(OSError, match="disk went away"):
        bundle.unpack(path, tmp_path / "unpacked")
    assert seen and seen[0].relative_to(tmp_path).parts[0].startswith(".unpacked.")  # hidden while written
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing left


def test_the_member_limit_counts_every_member_once(made, tmp_path, monkeypatch):
    path, _ = made
    count = len(members(path))
    monkeypatch.setattr(bundle, "MAX_MEMBERS", count)
    bundle.unpack(path, tmp_path / "exactly")  # as many members as the limit: accepted
    monkeypatch.setattr(bundle, "MAX_MEMBERS", count - 1)
    with pytest.raises(bundle.BundleError, match=f"more than {count - 1} members"):
        bundle.unpack(path, tmp_path / "one-over")


def test_a_plain_tar_is_not_taken_for_a_bundle(made, tmp_path):
    path, _ = made
    plain = tmp_path / "plain.tar.gz"  # named like a bundle, but not gzipped
    with tarfile.open(plain, "w") as dst:
        for info, data in members(path):
            dst.addfile(info, io.BytesIO(data))
    with pytest.raises(bundle.BundleError, match="not a readable .tar.gz"):
        bundle.unpack(plain, tmp_path / "unpacked")


def test_the_total_size_limit_adds_every_member(made, tmp_path, monkeypatch):
    """A survivor of the 2026-12-05 mutation run: `total -= size` never
    reached the limit. Planted once: that mutant fails here."""
    path, _ = made
    sizes = [info.size for info, _ in members(path)]
    monkeypatch.setattr(bundle, "MAX_TOTAL_BYTES", sum(sizes))
    bundle.unpack(path, tmp_path / "exactly")  # exactly the limit: accepted
    monkeypatch.setattr(bundle, "MAX_TOTAL_BYTES", sum(sizes) - 1)
    with pytest.raises(bundle.BundleError, match=f"more than {sum(sizes) - 1} bytes"):
        bundle.unpack(path, tmp_path / "one-over")


def test_the_manifest_names_the_experiment(made, tmp_path):
    """A survivor: the manifest's `experiment` key renamed passed every unit test."""
    path, _ = made
    assert bundle.unpack(path, tmp_path / "u")["experiment"] == json.loads(members(path)[0][1])["experiment"]
    assert json.loads(members(path)[0][1])["experiment"]


@pytest.mark.parametrize("kind", [b"x", b"g", b"L", b"K"])
def test_a_header_bomb_is_refused_from_its_header_in_little_memory(tmp_path, kind):
    """Reliability round 6 (4): a 400 MB PAX extended or global header, GNU long name or long link in a
    bundle of under 1 MB cost 1.2 GB before tarfile's member checks ran. Now its declared size is read raw
    and refused: the verifying process's peak memory grows by under 32 MB. Planted once: without the raw
    scan (records/tarheaders.py), the PAX and the long-name cases grew by 406 MB and failed here."""
    import subprocess
    import sys
    import zlib

    from conftest import ROOT

    size = 400 * 2**20
    header = bytearray(512)
    header[0:13] = b"././@LongLink"
    header[100:108], header[124:136], header[156:157] = b"0000644\0", f"{size:011o}\0".encode(), kind
    header[257:263] = b"ustar\0"
    header[148:156] = f"{sum(header) + 8 * 32:06o}\0 ".encode()
    squeeze = zlib.compressobj(1, zlib.DEFLATED, 31)  # gzip
    path = tmp_path / "bomb.tar.gz"
    with open(path, "wb") as out:
        out.write(squeeze.compress(bytes(header)))
        chunk = bytes(4 * 2**20)
        for _ in range(size // len(chunk)):
            out.write(squeeze.compress(chunk))
        out.write(squeeze.compress(bytes(1024)) + squeeze.flush())
    assert path.stat().st_size < 2 * 2**20
    probe = (
        "import resource, sys; from mnist_speedup.records import bundle\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n    bundle.check(sys.argv[1]); print('accepted')\n"
        "except bundle.BundleError as exc:\n    print(exc)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT / "workflow"), "PATH": "/usr/bin:/bin"},
    )
    said, grown_kib = done.stdout.strip().rsplit("\n", 1)
    assert "declares 419,430,400 bytes, over the 65,536 a header may have" in said, done.stderr
    assert int(grown_kib) < 32 * 1024
