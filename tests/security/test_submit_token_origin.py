"""`gate submit --wait` sends its bearer token only to the server it was given (issue 44: it
followed the answer's `status_url` wherever that pointed, token included). A stand-in server answers
the submission with a `status_url` on another origin, which records every request it gets."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from gate.cli import main

TOKEN = "submit-token-5a9c"
DONE = {"id": 7, "status": "done", "error": None, "jobs": [
    {"id": 1, "kernel": "attn", "gpu_kind": "any", "state": "done", "progress": None, "error": None,
     "verdict": {"verdict": "accept", "reason": "ok", "gpu_kind": "any"}}]}


@contextmanager
def _server(answer) -> Iterator[tuple[str, list[tuple[str, str, str | None]]]]:  # noqa: ANN001
    """A loopback HTTP server answering `answer(method, path)` as JSON; its URL and (method, path,
    Authorization) per request."""
    seen: list[tuple[str, str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            seen.append((self.command, self.path, self.headers.get("Authorization")))
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, body = answer(self.command, self.path)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _reply

        def log_message(self, *_args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_wait_never_sends_the_token_to_the_origin_the_answer_names(capsys):
    with _server(lambda method, path: (200, DONE)) as (elsewhere, stolen):
        def gate(method: str, path: str) -> tuple[int, dict]:
            if method == "POST":
                return 202, {"id": 7, "reused": False, "status_url": f"{elsewhere}/api/v1/revisions/7"}
            return 200, DONE

        with _server(gate) as (server, seen):
            code = main(["submit", "--server", server, "--repo", "https://github.com/acme/k", "--sha", "main",
                         "--wait", "--token", TOKEN])
    assert code == 0, capsys.readouterr()
    assert stolen == []                                             # the other origin heard nothing
    assert seen[0][0] == "POST" and ("GET", "/api/v1/revisions/7", f"Bearer {TOKEN}") in seen
