"""Mirror faults against a real HTTP(S) server on 127.0.0.1 started here."""

import gzip
import http.server
import socket
import ssl
import subprocess
import threading
import time

import pytest

from mnist_speedup import mnist

NAME = "train-labels-idx1-ubyte"


class Handler(http.server.BaseHTTPRequestHandler):
    content: bytes = b""
    hits: dict = {}

    def log_message(self, *args):  # keep pytest output quiet
        pass

    def do_GET(self):
        kind = self.path.strip("/").split("/")[0]
        Handler.hits[kind] = Handler.hits.get(kind, 0) + 1
        good = gzip.compress(Handler.content)
        if kind == "404":
            self.send_error(404)
            return
        if kind == "flaky" and Handler.hits[kind] == 1:
            self.send_error(503)
            return
        body = {
            "ok": good,
            "flaky": good,
            "wrong": gzip.compress(Handler.content + b"\x00"),
            "notgzip": b"<html>not a gzip file</html>",
            "truncated": good,
            "stall": good,
        }[kind]
        if kind == "stall":
            time.sleep(3)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if kind == "truncated":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


@pytest.fixture
def server(synthetic_contents):
    Handler.content = synthetic_contents[NAME]
    Handler.hits = {}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", mnist.sha256_hex(Handler.content)
    httpd.shutdown()
    httpd.server_close()


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def fetch(mirrors, dest, sha, **kw):
    kw.setdefault("retries", 0)
    kw.setdefault("timeout", 1.0)
    return mnist.fetch_verified(NAME, mirrors, dest, sha, log=lambda *_: None, **kw)


@pytest.mark.parametrize(
    "fault, expected",
    [
        ("404", "404"),
        ("refused", "ConnectionError"),
        ("truncated", ""),  # requests or the gzip check, whichever notices first
        ("wrong", "SHA-256 of the decompressed content"),
        ("notgzip", "not a gzip file"),
        ("stall", "Timeout"),
    ],
)
def test_each_fault_falls_through_to_the_next_mirror(server, tmp_path, fault, expected):
    base, sha = server
    bad = f"http://127.0.0.1:{closed_port()}/" if fault == "refused" else f"{base}/{fault}/"
    dest = tmp_path / "resources" / f"{NAME}.gz"
    start = time.monotonic()
    with pytest.raises(mnist.DownloadError) as err:
        fetch([bad], dest, sha)
    assert time.monotonic() - start < 10  # a stalled server times out instead of hanging
    assert bad in str(err.value) and expected in str(err.value)
    assert not dest.exists() and list(dest.parent.iterdir()) == []  # nothing partial or unverified
    assert fetch([bad, f"{base}/ok/"], dest, sha) == f"{base}/ok/"
    assert gzip.decompress(dest.read_bytes()) == Handler.content
    assert list(dest.parent.iterdir()) == [dest]


def test_all_faults_listed_in_one_message(server, tmp_path):
    base, sha = server
    mirrors = [f"{base}/{k}/" for k in ("404", "wrong", "notgzip")] + [f"http://127.0.0.1:{closed_port()}/"]
    with pytest.raises(mnist.DownloadError) as err:
        fetch(mirrors, tmp_path / f"{NAME}.gz", sha)
    text = str(err.value)
    for mirror in mirrors:
        assert mirror in text
    assert text.count("\n  - ") == len(mirrors)
    assert "Fix: set `mirrors`" in text


def test_retry_recovers_from_a_transient_error(server, tmp_path):
    base, sha = server
    dest = tmp_path / f"{NAME}.gz"
    assert fetch([f"{base}/flaky/"], dest, sha, retries=1) == f"{base}/flaky/"
    assert Handler.hits["flaky"] == 2


def test_https_certificates_are_verified(tmp_path, synthetic_contents):
    """A self-signed server is refused: verification is never turned off."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
         "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    Handler.content = synthetic_contents[NAME]
    Handler.hits = {}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"https://127.0.0.1:{httpd.server_address[1]}/ok/"
        with pytest.raises(mnist.DownloadError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            fetch([url], tmp_path / f"{NAME}.gz", mnist.sha256_hex(Handler.content))
    finally:
        httpd.shutdown()
        httpd.server_close()
