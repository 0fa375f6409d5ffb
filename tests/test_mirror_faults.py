"""Mirror faults against a real HTTP(S) server on 127.0.0.1 started here."""

import gzip
import http.server
import os
import re
import socket
import ssl
import subprocess
import threading
import time

import pytest

from mnist_speedup.data import mnist

NAME = "train-labels-idx1-ubyte"


class Handler(http.server.BaseHTTPRequestHandler):
    content: bytes = b""
    hits: dict = {}
    paths: list = []

    def log_message(self, *args):  # keep pytest output quiet
        pass

    def do_GET(self):
        kind = self.path.strip("/").split("/")[0]
        Handler.hits[kind] = Handler.hits.get(kind, 0) + 1
        Handler.paths.append(self.path)
        good = gzip.compress(Handler.content)
        if kind == "auth" and self.headers.get("Authorization") != "Basic dXNlcjpzZWNyZXQ=":  # user:secret
            self.send_error(401, "bad password")
            return
        if kind == "trickle":  # 200 bytes every 0.5 s: never stalls, never finishes (connection-close framing)
            self.send_response(200)
            self.end_headers()
            for i in range(0, len(good), 200):
                self.wfile.write(good[i : i + 200])
                self.wfile.flush()
                time.sleep(0.5)
            return
        if kind in ("trickle-length", "trickle-chunked"):  # 1 byte every 0.2 s, with a framing the reader trusts
            self.send_response(200)
            chunked = kind == "trickle-chunked"
            self.send_header(*(("Transfer-Encoding", "chunked") if chunked else ("Content-Length", str(len(good)))))
            self.end_headers()
            try:
                for byte in good:
                    self.wfile.write(b"1\r\n" + bytes([byte]) + b"\r\n" if chunked else bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:  # the client gave up
                pass
            return
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
            "auth": good,
            "bomb": gzip.compress(b"\0" * 50_000_000),  # 50 kB that unpack to 50 MB
            "huge": os.urandom(400_000),  # more raw bytes than any train-labels .gz can be
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
    Handler.hits, Handler.paths = {}, []
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
        ("truncated", "IncompleteRead|Connection broken|truncated or corrupt"),  # requests or the gzip check
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
    assert bad in str(err.value) and re.search(expected, str(err.value)), str(err.value)
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


@pytest.mark.parametrize("framing", ["trickle", "trickle-length", "trickle-chunked"])
def test_a_trickling_mirror_is_abandoned_at_the_deadline_whatever_its_framing(server, tmp_path, framing):
    base, sha = server
    start = time.monotonic()
    with pytest.raises(mnist.DownloadError, match=r"took longer than download_deadline \(2 s\); abandoned"):
        fetch([f"{base}/{framing}/"], tmp_path / f"{NAME}.gz", sha, deadline=2.0)
    assert time.monotonic() - start < 5  # the deadline plus a few seconds, never the whole trickle


def test_a_decompression_bomb_is_rejected_as_soon_as_it_passes_the_mnist_size(server, tmp_path):
    base, sha = server
    with pytest.raises(mnist.DownloadError, match="decompresses to more than the 60008 bytes"):
        fetch([f"{base}/bomb/"], tmp_path / f"{NAME}.gz", sha)


def test_the_verification_streams(tmp_path):
    """The check reads the decompressed file in chunks: no file is ever read whole."""
    import tracemalloc

    path = tmp_path / "big.gz"
    path.write_bytes(gzip.compress(b"\1" * 40_000_000))
    tracemalloc.start()
    with pytest.raises(mnist.MirrorError, match="SHA-256"):
        mnist.verify_file(path, "train-images-idx3-ubyte", "0" * 64)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5_000_000, peak


def test_credentials_never_appear_in_messages_or_results(server, tmp_path):
    base, sha = server
    port = base.rsplit(":", 1)[1]
    good, wrong = f"http://user:secret@127.0.0.1:{port}/auth/", f"http://user:wrongpw@127.0.0.1:{port}/auth/"
    logged = []
    used = mnist.fetch_verified(NAME, [wrong, good], tmp_path / f"{NAME}.gz", sha, retries=0, log=logged.append)
    assert used == f"http://user:***@127.0.0.1:{port}/auth/"
    text = "\n".join(logged)
    assert "secret" not in text and "wrongpw" not in text and "user:***@" in text
    with pytest.raises(mnist.DownloadError) as err:
        fetch([wrong], tmp_path / "again.gz", sha)
    assert "wrongpw" not in str(err.value) and "user:***@127.0.0.1" in str(err.value)


def test_a_query_string_stays_a_query(server, tmp_path):
    base, sha = server
    assert mnist.file_url("https://h/mnist/?token=abc", "t10k-labels-idx1-ubyte") == (
        "https://h/mnist/t10k-labels-idx1-ubyte.gz?token=abc"
    )
    fetch([f"{base}/ok/?token=abc"], tmp_path / f"{NAME}.gz", sha)
    assert Handler.paths[-1] == f"/ok/{NAME}.gz?token=abc"


def test_https_certificates_are_verified(tmp_path, synthetic_contents):
    """A self-signed server is refused: verification is never turned off."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            key,
            "-out",
            cert,
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
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


def test_a_mirror_sending_more_than_the_cap_is_cut_off(server, tmp_path):
    base, sha = server
    cap = mnist.max_download_bytes(NAME)
    assert cap < 400_000
    with pytest.raises(mnist.DownloadError, match=rf"sent more than {cap} bytes"):
        fetch([f"{base}/huge/"], tmp_path / f"{NAME}.gz", sha)


def test_credentials_from_a_netrc_file_reach_the_mirror(server, tmp_path, monkeypatch):
    """The README's advice: the password in ~/.netrc (here $NETRC), none in the config."""
    base, sha = server
    port = base.rsplit(":", 1)[1]
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login user password secret\n")
    netrc.chmod(0o600)
    mirror = f"http://127.0.0.1:{port}/auth/"
    with pytest.raises(mnist.DownloadError, match="401"):  # without it the server refuses
        monkeypatch.setenv("NETRC", str(tmp_path / "none"))
        fetch([mirror], tmp_path / "first" / f"{NAME}.gz", sha)
    monkeypatch.setenv("NETRC", str(netrc))
    assert fetch([mirror], tmp_path / "second" / f"{NAME}.gz", sha) == mirror
