"""A git remote that never answers: a loopback TCP server that accepts every connection and holds it
without a byte (git over http:// waits for the first reply until its own timeout)."""

from __future__ import annotations

import socket
import threading


class SilentRemote:
    """On `host`, any loopback address (Linux routes all of 127.0.0.0/8 to the loopback)."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.listener = socket.create_server((host, 0), backlog=256)
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def url(self, name: str) -> str:
        return f"http://{self.host}:{self.port}/{name}.git"

    def __enter__(self) -> SilentRemote:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self.listener.close()
        for connection in self.held:        # git sees the connection close and gives up at once
            connection.close()
        self._thread.join(5)

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                connection, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self.held.append(connection)
