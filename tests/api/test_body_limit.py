"""Request bodies are capped for every route (`GATE_MAX_BODY_BYTES`, `gate.api.body_limit`).

Issue 12: the webhook read a whole 300 MB unsigned body (+477 MiB) before it checked the signature.
These tests failed before the cap: the server read every byte and answered 401 (webhook) or 422."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest
from serve_process import free_port, gate_env, start_server

DECLARED = 300_000_000          # what the attacker claims, or streams
CAP = 1024 * 1024               # the server's cap in the real-HTTP tests
CHUNK = b"x" * (256 * 1024)


def _peak_rss_kib(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/<pid>/status")


def _post_huge(port: int, *, chunked: bool) -> tuple[str, bytes, int]:
    """POST a 300 MB webhook body (declared, or chunked without a length) with a signature header
    that cannot match (without one it is refused before the size matters, `gate.api.auth`) while
    reading the answer; the sender stops once the server answers or closes. (status line, body, bytes sent)"""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(60)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {DECLARED}"
    sock.sendall((f"POST /api/v1/webhooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\n{framing}\r\n"
                  "Content-Type: application/json\r\nX-GitHub-Event: push\r\nX-GitHub-Delivery: big-1\r\n"
                  "X-Hub-Signature-256: sha256=00\r\n\r\n").encode())
    sent, answered = 0, threading.Event()

    def send_body() -> None:
        nonlocal sent
        frame = f"{len(CHUNK):x}\r\n".encode() + CHUNK + b"\r\n" if chunked else CHUNK
        try:
            while sent < DECLARED and not answered.is_set():
                sock.sendall(frame)
                sent += len(CHUNK)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except OSError:        # the server closed the connection: what we want
            pass

    sender = threading.Thread(target=send_body, daemon=True)
    sender.start()
    reply = b""
    try:
        while b"\r\n\r\n" not in reply:
            data = sock.recv(65536)
            if not data:
                break
            reply += data
        head, _, body = reply.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            data = sock.recv(65536)
            if not data:
                break
            body += data
    finally:
        answered.set()
        sock.close()
        sender.join(30)
    return head.split(b"\r\n")[0].decode(), body, sent


@pytest.fixture
def server(tmp_path):  # noqa: ANN201
    port = free_port()
    env = gate_env(GATE_DATABASE_URL=f"sqlite:///{tmp_path / 'gate.db'}", GATE_DATA_DIR=str(tmp_path / "data"),
                   GATE_GITHUB_WEBHOOK_SECRET="webhook-secret", GATE_MAX_BODY_BYTES=str(CAP),
                   GATE_WARM_HISTORY="false")
    with open(tmp_path / "serve.log", "w") as log:
        proc = start_server(env, port, log)
        try:
            yield port, proc
        finally:
            proc.terminate()
            proc.wait(30)


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_a_300mb_unsigned_webhook_body_is_refused_unread_over_real_http(server, chunked):
    """A 300 MB body, declared in Content-Length or streamed chunked, is answered 413 naming the
    limit before the signature is looked at; the server reads at most the cap (plus what the
    sockets buffer) and its peak memory stays flat. Before the cap it read all 300 MB (+477 MiB)
    and answered 401."""
    port, proc = server
    peak_before = _peak_rss_kib(proc.pid)
    status, body, sent = _post_huge(port, chunked=chunked)
    assert status.split()[1] == "413", (status, body[:200])
    assert f"larger than {CAP} bytes (GATE_MAX_BODY_BYTES)".encode() in body
    assert sent < 64 * 1024 * 1024, f"the client got to send {sent} bytes"
    growth_mib = (_peak_rss_kib(proc.pid) - peak_before) / 1024
    assert growth_mib < 64, f"the server's peak memory grew by {growth_mib:.0f} MiB"


def test_every_route_refuses_a_body_over_the_cap_with_413(make_client, repo_dir):
    """The JSON API as well as the webhook: a declared length over the cap is a 413 naming the
    limit (failed before: the body was read and validated, a 422)."""
    client = make_client()
    limit = client.app.state.gate.settings.max_body_bytes
    big = b'{"repo": "' + b"a" * limit + b'", "sha": "HEAD"}'
    for path in ("/api/v1/revisions", "/api/v1/webhooks/github", "/api/v1/kernels"):
        reply = client.post(path, content=big, headers={"Content-Type": "application/json"})
        assert reply.status_code == 413, (path, reply.status_code)
        assert f"larger than {limit} bytes" in reply.json()["detail"]


def test_a_body_under_the_cap_is_read_as_before(make_client, repo_dir):
    reply = make_client().post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD"})
    assert reply.status_code == 202
