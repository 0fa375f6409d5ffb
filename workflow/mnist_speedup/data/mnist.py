"""MNIST: fetch from mirrors, verify by content, parse IDX, split.

The four files are verified by the SHA-256 of their *decompressed* bytes, so
a mirror that re-compressed the files is accepted while a corrupt, truncated
or wrong file is not. Nothing unverified is ever moved into the output
folder: downloads land in a private temporary folder, are checked there and
are then moved into place with an atomic rename.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import shutil
import socket
import struct
import tempfile
import threading
import time
import zlib
from pathlib import Path

import numpy as np

from mnist_speedup import atomic
from mnist_speedup.data.urls import file_url, local_dir, mask_text, mask_url, mirror_kind
from mnist_speedup.spec import schema

FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)

#: SHA-256 of the decompressed canonical files (LeCun et al.).
CANONICAL_SHA256 = {
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}


class MirrorError(Exception):
    """One mirror failed to deliver one verified file."""


class DownloadError(RuntimeError):
    """Every mirror failed; the message lists each one and why."""


class IDXError(ValueError):
    """A file is not a valid IDX file of the expected kind."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


MAX_CONTENT_BYTES = {
    "train-images-idx3-ubyte": 47_040_016,
    "train-labels-idx1-ubyte": 60_008,
    "t10k-images-idx3-ubyte": 7_840_016,
    "t10k-labels-idx1-ubyte": 10_008,
}
_CHUNK = 1 << 16


def max_download_bytes(name: str) -> int:
    """A .gz of the file can be at most a little larger than its content."""
    return MAX_CONTENT_BYTES[name] + MAX_CONTENT_BYTES[name] // 100 + _CHUNK


def verify_file(path: Path, name: str, expected_sha256: str) -> None:
    """Decompress and hash ``path`` as a stream; memory stays bounded, and a
    file that decompresses past the known MNIST size is rejected there."""
    limit = MAX_CONTENT_BYTES.get(name)
    with open(path, "rb") as raw:
        if raw.read(2) != b"\x1f\x8b":
            raise MirrorError(f"{name}.gz is not a gzip file ({path.stat().st_size} bytes)")
        raw.seek(0)
        digest, size = hashlib.sha256(), 0
        try:
            with gzip.GzipFile(fileobj=raw) as stream:
                while chunk := stream.read(_CHUNK):
                    size += len(chunk)
                    if limit is not None and size > limit:
                        raise MirrorError(f"{name}.gz decompresses to more than the {limit} bytes of MNIST's {name}")
                    digest.update(chunk)
        except (EOFError, OSError, zlib.error) as exc:
            raise MirrorError(f"{name}.gz is truncated or corrupt ({exc})") from exc
    if digest.hexdigest() != expected_sha256:
        raise MirrorError(
            f"{name}: SHA-256 of the decompressed content is {digest.hexdigest()}, expected {expected_sha256} "
            "(wrong or damaged file)"
        )


def _stream_to(response, dest: Path, name: str, deadline: float, deadline_s: float) -> None:
    limit = max_download_bytes(name) if name in MAX_CONTENT_BYTES else None
    got = 0
    with open(dest, "wb") as out:
        for chunk in response.iter_content(_CHUNK):
            got += len(chunk)
            if limit is not None and got > limit:
                raise MirrorError(f"sent more than {limit} bytes, more than any {name}.gz can be")
            if time.monotonic() > deadline:
                raise MirrorError(f"took longer than download_deadline ({deadline_s:g} s); abandoned")
            out.write(chunk)


class _Watchdog:
    """Cuts a response's connection at the deadline. A mirror that sends a
    byte now and then never stalls a read long enough for the timeout, and
    with a Content-Length or chunked framing the reader waits for a whole
    chunk inside one call: only closing the socket under it ends that wait."""

    def __init__(self, response, deadline: float):
        self.response, self.fired = response, False
        self.timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._cut)
        self.timer.daemon = True

    def _cut(self) -> None:
        self.fired = True
        raw = self.response.raw
        sock = getattr(getattr(raw, "connection", None), "sock", None)
        if sock is None:  # http.client's file object over the socket
            sock = getattr(getattr(getattr(getattr(raw, "_fp", None), "fp", None), "raw", None), "_sock", None)
        with contextlib.suppress(OSError, AttributeError):
            sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self):
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.cancel()


def _fetch_http(base: str, name: str, staging: Path, timeout: float, retries: int, deadline_s: float) -> Path:
    """Download as a stream into ``staging``. ``timeout`` bounds each wait
    for the server, ``deadline_s`` the whole file, attempts included. TLS
    certificates are always verified (requests' default, never turned off)."""
    import requests  # imported here: only HTTP mirrors need it

    url, deadline = file_url(base, name), time.monotonic() + deadline_s
    staging.mkdir(parents=True, exist_ok=True)
    dest = staging / (name + ".gz")
    late = MirrorError(f"took longer than download_deadline ({deadline_s:g} s); abandoned")
    for attempt in range(retries + 1):
        try:
            with requests.get(url, stream=True, timeout=timeout) as response, _Watchdog(response, deadline) as dog:
                response.raise_for_status()
                try:
                    _stream_to(response, dest, name, deadline, deadline_s)
                finally:
                    if dog.fired:  # the read was cut at the deadline, whatever it then raised or returned
                        raise late
            return dest
        except MirrorError as exc:
            raise MirrorError(f"{mask_url(url)}: {exc}") from None
        except Exception as exc:  # requests raises many types; report them all the same way
            if attempt == retries or time.monotonic() + attempt + 1 > deadline:
                raise MirrorError(f"{mask_url(url)}: {type(exc).__name__}: {mask_text(str(exc), base)}") from None
            time.sleep(attempt + 1)
    raise AssertionError("unreachable")


def _fetch_local(base: str, name: str) -> Path:
    folder = local_dir(base)
    candidate = folder / (name + ".gz")
    if not candidate.is_file():
        raise MirrorError(f"{candidate} does not exist")
    return candidate


def fetch_verified(
    name: str,
    mirrors: list[str],
    dest: Path,
    expected_sha256: str,
    timeout: float | None = None,
    retries: int | None = None,
    log=print,
    deadline: float | None = None,
) -> str:
    """Fetch ``name``.gz from the first mirror that has a verified copy.

    Writes ``dest`` atomically and returns the mirror used (its password
    masked). Raises DownloadError listing every mirror tried and its failure.
    ``timeout``, ``retries`` and ``deadline`` left out are the config
    schema's defaults (``download_*``).
    """
    timeout = schema.default("download_timeout") if timeout is None else timeout
    retries = schema.default("download_retries") if retries is None else retries
    deadline = schema.default("download_deadline") if deadline is None else deadline
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    failures = []
    with tempfile.TemporaryDirectory(prefix="mnist-download-") as staging:
        for number, mirror in enumerate(mirrors):
            shown = mask_url(mirror)
            try:
                if mirror_kind(mirror) == "http":
                    got = _fetch_http(mirror, name, Path(staging) / str(number), timeout, retries, deadline)
                else:
                    got = _fetch_local(mirror, name)
                verify_file(got, name, expected_sha256)
                with atomic.replacing(dest) as tmp:
                    shutil.copyfile(got, tmp)
            except (MirrorError, ValueError, OSError) as exc:
                why = mask_text(str(exc), mirror)
                log(f"mirror {shown}: {why}")
                failures.append((shown, why))
                continue
            log(f"{name}: verified from {shown}")
            return shown
    lines = "\n".join(f"  - {m}: {why}" for m, why in failures) or "  (no mirrors configured)"
    raise DownloadError(
        f"could not get a verified copy of {name} from any mirror:\n{lines}\n"
        "Fix: set `mirrors` in the config (or --config mirrors=...) to a reachable mirror or to "
        "a local directory holding the four MNIST .gz files, e.g. mirrors: ['/data/mnist']. "
        "Keep passwords out of the config: put them in ~/.netrc, which the download reads."
    )


def content_digest(npz: Path) -> str:
    """SHA-256 of the arrays in an npz (names, dtypes, shapes and bytes),
    independent of how the file was compressed."""
    digest = hashlib.sha256()
    with np.load(npz) as data:
        for name in sorted(data.files):
            array = data[name]
            digest.update(f"{name} {array.dtype.str} {array.shape}\n".encode())
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def write_npz(dest: Path, **arrays) -> None:
    with atomic.replacing(dest) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)  # uncompressed: every run loads it, and bytes compress little


# --------------------------------------------------------------------- IDX

_IDX_UBYTE = 0x08


def parse_idx(content: bytes, ndim: int, name: str = "IDX file") -> np.ndarray:
    """Parse an unsigned-byte IDX array of ``ndim`` dimensions."""
    if len(content) < 4:
        raise IDXError(f"{name}: too short to be an IDX file ({len(content)} bytes)")
    zero, dtype, got_ndim = struct.unpack(">HBB", content[:4])
    if zero != 0 or dtype != _IDX_UBYTE:
        raise IDXError(f"{name}: bad IDX magic {content[:4].hex()} (expected 0000080{ndim})")
    if got_ndim != ndim:
        raise IDXError(f"{name}: has {got_ndim} dimensions, expected {ndim}")
    header = 4 + 4 * ndim
    if len(content) < header:
        raise IDXError(f"{name}: truncated IDX header")
    shape = struct.unpack(">" + "I" * ndim, content[4:header])
    expected = int(np.prod(shape, dtype=np.int64))
    if len(content) - header != expected:
        raise IDXError(
            f"{name}: header says shape {shape} ({expected} bytes) but the body has {len(content) - header} bytes"
        )
    return np.frombuffer(content, dtype=np.uint8, offset=header).reshape(shape)


def read_idx_gz(path: Path, ndim: int) -> np.ndarray:
    return parse_idx(gzip.decompress(Path(path).read_bytes()), ndim, name=Path(path).name)


def pixels(images: np.ndarray) -> np.ndarray:
    """Images as the network takes them: float32 in [0, 1]. Bytes (as the
    npz holds them) are divided by 255; floats are taken as already scaled."""
    if images.dtype == np.uint8:
        return (images.astype(np.float32) / 255.0).astype(np.float32)
    return images.astype(np.float32, copy=False)


def split(
    train_images: np.ndarray,
    train_labels: np.ndarray,
    test_images: np.ndarray,
    test_labels: np.ndarray,
    validation_size: int = 10_000,
) -> dict[str, np.ndarray]:
    """The original's split: the last ``validation_size`` training images
    are the validation set, flattened to 784 features. Pixels stay bytes
    (0-255, a quarter of the float32 size, so that the npz can be written
    and read without compression); ``pixels`` scales them to [0, 1] as
    float32 when a run loads them."""
    if len(train_images) != len(train_labels) or len(test_images) != len(test_labels):
        raise IDXError("image and label counts differ")
    if not 0 < validation_size < len(train_images):
        raise IDXError(
            f"validation_size {validation_size} must be between 1 and the number of "
            f"training images minus one ({len(train_images) - 1})"
        )

    def flat(images: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(images.reshape(len(images), -1), dtype=np.uint8)

    cut = len(train_images) - validation_size
    return {
        "x_train": flat(train_images[:cut]),
        "y_train": train_labels[:cut].astype(np.int64),
        "x_val": flat(train_images[cut:]),
        "y_val": train_labels[cut:].astype(np.int64),
        "x_test": flat(test_images),
        "y_test": test_labels.astype(np.int64),
    }


def prepare(folder: Path, dest: Path, validation_size: int = 10_000) -> dict[str, int]:
    """Parse the four verified files in ``folder`` and write the split npz."""
    folder = Path(folder)
    arrays = split(
        read_idx_gz(folder / "train-images-idx3-ubyte.gz", 3),
        read_idx_gz(folder / "train-labels-idx1-ubyte.gz", 1),
        read_idx_gz(folder / "t10k-images-idx3-ubyte.gz", 3),
        read_idx_gz(folder / "t10k-labels-idx1-ubyte.gz", 1),
        validation_size=validation_size,
    )
    write_npz(dest, **arrays)
    return {k: len(v) for k, v in arrays.items() if k.startswith("x_")}
