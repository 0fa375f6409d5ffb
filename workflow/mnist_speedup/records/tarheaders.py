"""A bundle's tar headers, read raw before Python's tarfile decodes any of them.

Python's tarfile reads the whole payload of a PAX extended or global header
and of a GNU long name or long link into memory to decode it, before any
member check can run: a 1.8 MB bundle holding one 400 MB PAX header cost
1.2 GB. :func:`scan` walks the decompressed stream 512 bytes at a time,
reads each header's type and declared size, refuses a header of any kind
that declares more than :data:`MAX_HEADER_BYTES`, or a member larger than
the bundle's limit, and skips each payload in small chunks without keeping
it. Only a bundle that passes is opened with tarfile.
"""

from __future__ import annotations

import gzip
import zlib

BLOCK = 512
#: the most a header's own payload (a PAX record set, a long name or link) may declare: honest ones are tiny
MAX_HEADER_BYTES = 64 * 1024
#: the header types whose payload tarfile reads whole into memory, in words
HEADERS = {b"x": "PAX extended header", b"g": "PAX global header", b"L": "GNU long name", b"K": "GNU long link"}
#: a payload is skipped in chunks of this size
CHUNK = 2**20


class HeaderError(ValueError):
    pass


def _size(header: bytes) -> int:
    """The size field (octal text, or GNU's base-256 for sizes past 8 GiB)."""
    field = header[124:136]
    if field[0] & 0x80:
        return int.from_bytes(field[1:], "big")
    text = field.split(b"\0", 1)[0].strip()
    if not text:
        return 0
    try:
        return int(text, 8)
    except ValueError:
        raise HeaderError(f"a tar header's size field is {field!r}, not a size") from None


def _skip(stream, n: int) -> None:
    while n > 0:
        got = len(stream.read(min(n, CHUNK)))
        if got == 0:
            raise HeaderError("the archive ends inside a member; it is truncated or damaged")
        n -= got


def scan(path, max_member_bytes: int, max_headers: int) -> int:
    """Check every header of the .tar.gz at ``path`` from its raw bytes; returns how many there are.
    HeaderError names the first that may not be read."""
    count = 0
    try:
        with gzip.open(path, "rb") as stream:
            while (header := stream.read(BLOCK)) and header.strip(b"\0"):
                if len(header) < BLOCK:
                    raise HeaderError("the archive ends inside a header; it is truncated or damaged")
                count += 1
                if count > max_headers:
                    raise HeaderError(f"it has more than {max_headers} tar headers")
                kind, size = header[156:157], _size(header)
                if kind in HEADERS and size > MAX_HEADER_BYTES:
                    raise HeaderError(
                        f"a {HEADERS[kind]} declares {size:,} bytes, over the {MAX_HEADER_BYTES:,} a header may have"
                    )
                if size > max_member_bytes:
                    name = header[:100].split(b"\0", 1)[0].decode("utf-8", "replace")
                    raise HeaderError(f"member {name!r} is {size} bytes, over the {max_member_bytes}-byte limit")
                _skip(stream, -(-size // BLOCK) * BLOCK)
    except (OSError, EOFError, zlib.error) as exc:
        raise HeaderError(
            f"it is not a readable .tar.gz ({type(exc).__name__}: {exc}); it is truncated or damaged"
        ) from None
    return count
