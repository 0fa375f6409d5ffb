"""Mirror locations: what kind each is, and its secrets kept out of every message.

A mirror is an http(s):// or file:// URL or a local folder. A URL's password
(in every form it may be shown: raw, percent-encoded, split by a character
that should have been encoded) and its query values are masked wherever a
URL or a message about it is logged; a URL whose user information does not
parse to its host is refused, its password masked.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlparse, urlsplit, urlunsplit

SUPPORTED_SCHEMES = ("https", "http", "file")


def mirror_kind(mirror: str) -> str:
    """'http' for http(s) URLs, 'local' for file:// URLs and plain paths.

    Raises ValueError for any other URL scheme.
    """
    parsed = urlparse(mirror)
    if parsed.scheme in ("http", "https"):
        info = _userinfo(mirror)
        if info is not None and (re.search(r"[#/? ]", info) or "@" in info.split(":", 1)[-1]):
            raise ValueError(
                f"mirror {mask_url(mirror)!r} has a user name or password holding @ # / ? or a space, so the URL "
                "does not parse to its host"
            )
        return "http"
    if parsed.scheme in ("file", ""):
        return "local"
    if len(parsed.scheme) == 1:  # a Windows drive letter, e.g. C:\data
        return "local"
    raise ValueError(
        f"mirror {mask_url(mirror)!r} has the unsupported scheme {parsed.scheme!r}; "
        f"use one of {', '.join(s + '://' for s in SUPPORTED_SCHEMES)} or a local directory path"
    )


def local_dir(mirror: str) -> Path:
    parsed = urlparse(mirror)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    return Path(mirror).expanduser()


#: decompressed sizes of the canonical files: nothing longer can be MNIST
def _userinfo(url: str) -> str | None:
    """``user:password`` of a URL, read from its raw text up to the last
    ``@``, so that a password holding ``@ # / ?`` or a space is found whole."""
    _, sep, rest = str(url).partition("://")
    return rest.rpartition("@")[0] if sep and "@" in rest else None


def secrets(url: str) -> list[str]:
    """Every form in which a URL's password or query values may be shown:
    raw, percent-encoded, decoded, and the pieces a wrong split leaves."""
    found = set()
    info = _userinfo(url)
    if info is not None and ":" in info:
        password = info.split(":", 1)[1]
        found |= {password, quote(password, safe=""), quote(password), unquote(password)}
        found |= set(re.split(r"[@#/? ]", password)) | {info}
    for value in re.findall(r"[?&][^=&#\s]+=([^&#\s]+)", str(url)):  # query values, wherever a split put them
        found |= {value, quote(value, safe=""), unquote(value)}
    return sorted((x for x in found if len(x) >= 2), key=len, reverse=True)


def mask_text(text: str, url: str) -> str:
    """``text`` with every form of ``url``'s secrets replaced by ``***``."""
    for secret in secrets(url):
        text = text.replace(secret, "***")
    return text


def mask_url(url: str) -> str:
    """The URL with its password and query values replaced: ``http://user:***@host/...?token=***``."""
    url, info = str(url), _userinfo(url)
    if info is not None:
        head, _, rest = url.partition("://")
        name = info.split(":", 1)[0]
        url = f"{head}://{name + ':' if name else ''}***@{rest.rpartition('@')[2]}"
    parts = urlsplit(url)
    if parts.query:
        query = "&".join(f"{k}=***" for k, _ in parse_qsl(parts.query, keep_blank_values=True))
        url = urlunsplit(parts._replace(query=query))
    return url


def file_url(base: str, name: str) -> str:
    """``name``.gz inside the mirror ``base``; a query string is kept as a query."""
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + name + ".gz"))
