"""Requests written on a raw socket, bounded in time: a body sent while the answer is read, so that
a server which answers early (or closes) stops the sender (what a body-flooding client does); and a
body that comes slowly or not at all (what a client holding the server's budget does)."""

from __future__ import annotations

import socket
import threading
import time

CHUNK = b"x" * (1 << 20)


def post_body(port: int, path: str, headers: dict[str, str], size: int, timeout_s: float = 60) -> int:
    """POST `size` bytes to `path`; the answer's status code (0: the server closed without one)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": "127.0.0.1", "Content-Length": str(size), **headers}.items())
    sent, answered = 0, threading.Event()

    def send() -> None:
        nonlocal sent
        try:
            sock.sendall(f"POST {path} HTTP/1.1\r\n{head}\r\n".encode())
            while sent < size and not answered.is_set():
                piece = CHUNK[: size - sent]
                sock.sendall(piece)
                sent += len(piece)
        except OSError:         # the server answered and closed: what a refusal looks like
            pass

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    reply = b""
    try:
        while b"\r\n" not in reply:
            data = sock.recv(4096)
            if not data:
                break
            reply += data
    except OSError:
        pass
    finally:
        answered.set()
        try:
            sock.shutdown(socket.SHUT_RDWR)     # unblocks the sender's sendall (close alone does not)
        except OSError:
            pass
        sender.join(timeout_s)
        sock.close()
    status = reply.split(b"\r\n", 1)[0].split()
    return int(status[1]) if len(status) > 1 else 0


class SlowSender:
    """A request that declares a body of `declared` bytes and then sends `trickle` bytes every
    `every_s` seconds (0: nothing), answered or not, until the server closes the connection or
    `give_up_s` passes: `status`, `answered_after_s` and `closed_after_s` say how and when."""

    def __init__(self, port: int, path: str, headers: dict[str, str], declared: int, trickle: int = 0,
                 every_s: float = 0.2, give_up_s: float = 60):
        self.status, self.answered_after_s, self.closed_after_s = 0, None, None
        self._sock = socket.create_connection(("127.0.0.1", port), timeout=every_s)
        head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": "127.0.0.1", "Content-Length": str(declared),
                                                      **headers}.items())
        self._sock.sendall(f"POST {path} HTTP/1.1\r\n{head}\r\n".encode())
        self._thread = threading.Thread(target=self._run, args=(trickle, give_up_s), daemon=True)
        self._started = time.monotonic()
        self._thread.start()

    def _run(self, trickle: int, give_up_s: float) -> None:
        reply = b""
        while time.monotonic() - self._started < give_up_s:
            try:
                data = self._sock.recv(4096)
            except TimeoutError:            # nothing from the server now: send the next few bytes
                try:
                    self._sock.sendall(b"x" * trickle)
                    continue
                except OSError:
                    data = b""
            except OSError:
                data = b""
            if not data:
                self.closed_after_s = time.monotonic() - self._started
                break
            reply += data
            if self.answered_after_s is None and b"\r\n" in reply:
                self.answered_after_s = time.monotonic() - self._started
                status = reply.split(b"\r\n", 1)[0].split()
                self.status = int(status[1]) if len(status) > 1 else 0
        self._sock.close()

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)
