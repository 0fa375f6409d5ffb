import gzip
import hashlib

import numpy as np
import pytest

from conftest import idx_bytes, write_mirror
from mnist_speedup.data import mnist, urls


def test_parse_idx_round_trip():
    images = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    assert np.array_equal(mnist.parse_idx(idx_bytes(images), 3), images)
    labels = np.array([3, 1, 4], dtype=np.uint8)
    assert np.array_equal(mnist.parse_idx(idx_bytes(labels), 1), labels)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\x00\x00", "too short"),
        (b"\x00\x00\x0d\x01" + b"\x00\x00\x00\x01" + b"\x00" * 4, "bad IDX magic"),
        (idx_bytes(np.zeros(3, dtype=np.uint8)), "has 1 dimensions, expected 3"),
        (idx_bytes(np.zeros((2, 2, 2), dtype=np.uint8))[:-1], "body has 7 bytes"),
    ],
)
def test_parse_idx_rejects_bad_files(content, message):
    with pytest.raises(mnist.IDXError, match=message):
        mnist.parse_idx(content, 3)


def test_verification_is_by_decompressed_content(tmp_path):
    data = idx_bytes(np.arange(10, dtype=np.uint8))
    expected = hashlib.sha256(data).hexdigest()
    path = tmp_path / "f.gz"

    def verify(raw):
        path.write_bytes(raw)
        mnist.verify_file(path, "f", expected)

    for level in (1, 9):  # re-compressed copies differ as .gz but are accepted
        verify(gzip.compress(data, compresslevel=level))
    with pytest.raises(mnist.MirrorError, match="SHA-256 of the decompressed content"):
        verify(gzip.compress(data + b"x"))
    with pytest.raises(mnist.MirrorError, match="not a gzip file"):
        verify(data)
    with pytest.raises(mnist.MirrorError, match="truncated or corrupt"):
        verify(gzip.compress(data)[:-6])


# The canonical SHA-256 of the decompressed files, as published with MNIST's
# mirrors (and in ../shared/data/mnist/README.md where that copy exists).
CANONICAL = {
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}


def test_canonical_sums_are_the_published_ones():
    assert mnist.CANONICAL_SHA256 == CANONICAL


def test_canonical_sums_match_the_shared_readme():
    import re

    from conftest import ROOT

    readme = ROOT.parent / "shared" / "data" / "mnist" / "README.md"
    if not readme.exists():
        pytest.skip("no shared MNIST copy beside this checkout")
    table = dict(re.findall(r"^\| (\S+-ubyte)\s+\| ([0-9a-f]{64}) \|", readme.read_text(), re.M))
    assert table == mnist.CANONICAL_SHA256


def test_a_file_of_many_chunks_is_verified_to_its_last_byte(tmp_path):
    """Several 64 KiB chunks, streamed: a verifier that hashed only the first chunk fails here."""
    rng = np.random.default_rng(1)
    data = idx_bytes(rng.integers(0, 256, size=(400, 28, 28)))  # 313,616 bytes: 5 chunks
    path = tmp_path / "f.gz"
    path.write_bytes(gzip.compress(data))
    mnist.verify_file(path, "f", hashlib.sha256(data).hexdigest())
    changed = bytearray(data)
    changed[-1] ^= 1  # only the last byte differs
    path.write_bytes(gzip.compress(bytes(changed)))
    with pytest.raises(mnist.MirrorError, match="SHA-256 of the decompressed content"):
        mnist.verify_file(path, "f", hashlib.sha256(data).hexdigest())


@pytest.mark.parametrize(
    "mirror, kind",
    [
        ("https://example.org/mnist/", "http"),
        ("http://127.0.0.1:8000/", "http"),
        ("file:///data/mnist", "local"),
        ("/data/mnist", "local"),
        ("../shared/data/mnist", "local"),
    ],
)
def test_mirror_kinds(mirror, kind):
    assert urls.mirror_kind(mirror) == kind


def test_unsupported_scheme_is_named():
    with pytest.raises(ValueError, match="unsupported scheme 'ftp'"):
        urls.mirror_kind("ftp://example.org/mnist")


def test_fallback_over_mirrors_and_atomic_write(tmp_path, synthetic_contents):
    name = "train-labels-idx1-ubyte"
    good = tmp_path / "good"
    sums = write_mirror(good, synthetic_contents)
    wrong = tmp_path / "wrong"
    write_mirror(wrong, {name: synthetic_contents[name][:-1] + b"\x07"})
    dest = tmp_path / "resources" / f"{name}.gz"
    messages = []
    used = mnist.fetch_verified(
        name, [str(tmp_path / "missing"), str(wrong), f"file://{good}"], dest, sums[name], log=messages.append
    )
    assert used == f"file://{good}"
    assert gzip.decompress(dest.read_bytes()) == synthetic_contents[name]
    assert any("does not exist" in m for m in messages) and any("SHA-256" in m for m in messages)
    assert sorted(p.name for p in dest.parent.iterdir()) == [dest.name]  # no temporary files left


def test_all_mirrors_fail_with_one_message(tmp_path, synthetic_contents):
    name = "t10k-labels-idx1-ubyte"
    wrong = tmp_path / "wrong"
    write_mirror(wrong, {name: b"not mnist"})
    dest = tmp_path / "resources" / f"{name}.gz"
    with pytest.raises(mnist.DownloadError) as err:
        mnist.fetch_verified(name, [str(tmp_path / "nowhere"), str(wrong)], dest, "0" * 64, log=lambda *_: None)
    text = str(err.value)
    assert str(tmp_path / "nowhere") in text and str(wrong) in text
    assert "does not exist" in text and "SHA-256" in text
    assert "set `mirrors`" in text
    assert not dest.exists() and list(dest.parent.iterdir()) == []


def test_split_is_the_originals(tmp_path, synthetic_contents):
    sums = write_mirror(tmp_path, synthetic_contents)
    assert set(sums) == set(mnist.FILES)
    sizes = mnist.prepare(tmp_path, tmp_path / "mnist.npz", validation_size=200)
    assert sizes == {"x_train": 1000, "x_val": 200, "x_test": 300}
    with np.load(tmp_path / "mnist.npz") as npz:
        assert npz["x_train"].dtype == np.uint8 and npz["x_train"].shape == (1000, 784)
        raw = mnist.parse_idx(synthetic_contents["train-images-idx3-ubyte"], 3)
        # validation is the *last* N training images
        assert np.array_equal(npz["x_val"][-1], raw[-1].reshape(-1))
        assert np.array_equal(npz["x_train"][0], raw[0].reshape(-1))


def test_a_run_loads_the_pixels_as_float32_in_0_1_bit_for_bit(tmp_path, synthetic_contents):
    """The npz keeps bytes; what a run trains on is exactly the float32
    pixels / 255 that earlier versions stored."""
    from mnist_speedup.measure import trainer

    write_mirror(tmp_path, synthetic_contents)
    mnist.prepare(tmp_path, tmp_path / "mnist.npz", validation_size=200)
    data = trainer.load_data(tmp_path / "mnist.npz")
    raw = mnist.parse_idx(synthetic_contents["train-images-idx3-ubyte"], 3).reshape(-1, 784)
    want = (raw.astype(np.float32) / 255.0).astype(np.float32)
    assert data["x_train"].dtype == np.float32 and data["x_train"].shape == (1000, 784)
    assert np.array_equal(data["x_train"], want[:1000]) and np.array_equal(data["x_val"], want[1000:])
    assert data["x_train"].min() == 0.0 and data["x_train"].max() == 1.0  # full scale
    floats = mnist.pixels(want)  # an npz of floats (hand-made, or an earlier version's) is taken as is
    assert floats.dtype == np.float32 and np.array_equal(floats, want)


def test_every_image_keeps_its_own_label_in_each_split(tmp_path, synthetic_contents):
    """Each (image, label) pair of the training, validation and test sets is
    the pair of the IDX files: a label shifted by one against its image fails."""
    write_mirror(tmp_path, synthetic_contents)
    mnist.prepare(tmp_path, tmp_path / "mnist.npz", validation_size=200)
    images = mnist.parse_idx(synthetic_contents["train-images-idx3-ubyte"], 3).reshape(-1, 784)
    labels = mnist.parse_idx(synthetic_contents["train-labels-idx1-ubyte"], 1)
    test_images = mnist.parse_idx(synthetic_contents["t10k-images-idx3-ubyte"], 3).reshape(-1, 784)
    test_labels = mnist.parse_idx(synthetic_contents["t10k-labels-idx1-ubyte"], 1)
    with np.load(tmp_path / "mnist.npz") as npz:
        for x, y, want_x, want_y in [
            (npz["x_train"], npz["y_train"], images[:-200], labels[:-200]),
            (npz["x_val"], npz["y_val"], images[-200:], labels[-200:]),
            (npz["x_test"], npz["y_test"], test_images, test_labels),
        ]:
            assert np.array_equal(x, want_x) and np.array_equal(y, want_y)


def test_a_truncated_idx_header_is_named_with_its_file():
    """A survivor of the 2026-12-05 mutation run: the message of a header cut
    short was never read by a test (`IDXError(None)` passed)."""
    with pytest.raises(mnist.IDXError, match=r"^train-images: truncated IDX header$"):
        mnist.parse_idx(b"\x00\x00\x08\x03" + b"\x00" * 5, 3, "train-images")
