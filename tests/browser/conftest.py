"""A real `gate serve` on a free port over a seeded SQLite history, and headless Debian Chromium.

Under pytest-xdist (scripts/test.sh) every worker makes its own session and module fixtures, so each
module here names an `xdist_group` and `--dist loadgroup` runs a group on one worker: the seeded
server is made once for the four modules that read it, the wheel is built once (in this checkout's
build/ folder, which two builds at a time would share), and `gate demo --sample` is started once.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.serve_process import wait_for
from tests.patience import HANG_S

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
REPO = Path(__file__).resolve().parents[2]


def answering(url: str, proc: subprocess.Popen, log: Path) -> None:
    """Return once `url`/healthz answers; fail at once, with the log, if `proc` exits first."""
    def up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"{' '.join(map(str, proc.args))} exited: {log.read_text()}")
        try:
            return httpx.get(url + "/healthz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False
    wait_for(up, what=f"{url} to answer")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("serve")
    env = {**os.environ, "GATE_DATABASE_URL": f"sqlite:///{tmp / 'gate.db'}",
           "GATE_DATA_DIR": str(tmp / "data"), "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, str(REPO / "scripts" / "seed_demo_db.py"), "--database-url",
                    env["GATE_DATABASE_URL"]], env=env, check=True, capture_output=True)
    port = _free_port()
    log = open(tmp / "serve.log", "w")   # noqa: SIM115 (closed below)
    proc = subprocess.Popen([sys.executable, "-m", "gate.cli", "serve", "--port", str(port),
                             "--no-executor"], env=env, stdout=log, stderr=subprocess.STDOUT,
                            cwd=tmp)
    url = f"http://127.0.0.1:{port}"
    try:
        answering(url, proc, tmp / "serve.log")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=HANG_S)
        log.close()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield PatientBrowser(b)
        b.close()


class PatientBrowser:
    """The browser, whose pages wait for what they wait for up to `HANG_S` (playwright's own default,
    30 s, and the 10-20 s the tests once gave were missed on a busy 2-core machine)."""

    def __init__(self, browser: object):
        self._browser = browser

    def new_page(self, **kwargs: object) -> object:
        page = self._browser.new_page(**kwargs)
        page.set_default_timeout(HANG_S * 1000)
        page.set_default_navigation_timeout(HANG_S * 1000)
        return page

    def __getattr__(self, name: str) -> object:
        return getattr(self._browser, name)


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    path = Path(os.environ.get("GATE_SCREENSHOT_DIR", REPO / ".gate" / "screenshots"))
    path.mkdir(parents=True, exist_ok=True)
    return path
