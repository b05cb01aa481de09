"""A request written on a raw socket, its body sent while the answer is read, so that a server which
answers early (or closes) stops the sender: what a body-flooding client does, bounded in time."""

from __future__ import annotations

import socket
import threading

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
