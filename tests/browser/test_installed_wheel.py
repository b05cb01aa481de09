"""The gate installed the way a user or an image installs it: the wheel, built from this checkout by
scripts/install-wheel.sh (the script the images run), in a fresh virtual environment elsewhere, then
`gate serve` on SQLite and on PostgreSQL with every page and /docs opened in Chromium.

The virtual environment has no pip and no dependencies of its own: a `.pth` line appends this test
environment's site-packages after the venv's own, so the dependencies need no network while `gate`
and `dashboards` can only come from the wheel (a directory named in a `.pth` file is put on sys.path
as it is: the `.pth` files inside it, such as an editable install's, are not run). The servers run
from another directory with no PYTHONPATH, and the test checks where `gate` was imported from.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.browser.conftest import answering

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("installed-wheel")]   # conftest.py says why

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "scripts" / "install-wheel.sh"
PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
GPU = "NVIDIA H100 80GB HBM3"       # the seeded sample history's GPU (gate.sample)


def _outside_env(**extra: str) -> dict[str, str]:
    """This process's environment without a path to the checkout or a gate setting of its own."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("GATE_")}
    return {**env, **extra}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding the wheel; returns its `bin` directory."""
    tmp = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([str(INSTALL), "build", "--python", sys.executable, str(REPO), str(tmp / "dist")],
                           capture_output=True, text=True, env=_outside_env(), cwd=tmp, timeout=300)
    assert built.returncode == 0, built.stderr
    wheel = built.stdout.split()[-1]
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp / "venv")], check=True, timeout=120)
    purelib = subprocess.run([str(tmp / "venv" / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "test-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = subprocess.run([str(INSTALL), "install", "--python", str(tmp / "venv" / "bin" / "python"),
                                "--no-deps", wheel], capture_output=True, text=True, env=_outside_env(),
                               cwd=tmp, timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    where = subprocess.run([str(tmp / "venv" / "bin" / "python"), "-c",
                            "import dashboards, gate; print(gate.__file__); print(dashboards.__file__)"],
                           capture_output=True, text=True, env=_outside_env(), cwd=tmp, check=True).stdout
    assert all(Path(p).is_relative_to(tmp / "venv") for p in where.split()), where
    return tmp / "venv" / "bin"


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, venv: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[str]:
    """`gate serve` of the installed wheel over the seeded sample history, on a free port."""
    tmp = tmp_path_factory.mktemp(f"serve-{request.param}")
    if request.param == "sqlite":
        url = f"sqlite:///{tmp / 'gate.db'}"
    else:
        import psycopg

        name = f"gate_wheel_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
        request.addfinalizer(lambda: _drop(name))
    env = _outside_env(GATE_DATABASE_URL=url, GATE_DATA_DIR=str(tmp / "data"))
    # The seeding script runs on the installed package too: its own folder is on sys.path, not the checkout.
    subprocess.run([str(venv / "python"), str(REPO / "scripts" / "seed_demo_db.py"), "--database-url", url],
                   env=env, cwd=tmp, check=True, capture_output=True, timeout=300)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(tmp / "serve.log", "w") as log:
        proc = subprocess.Popen([str(venv / "gate"), "serve", "--no-executor", "--port", str(port)], env=env,
                                cwd=tmp, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            answering(base, proc, tmp / "serve.log")
            yield base
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _drop(name: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _pages(base: str) -> dict[str, str]:
    """Every dashboard page, about the sample history's WMMA kernel."""
    hist = httpx.get(f"{base}/api/v1/kernels/flashcore_wmma/history", timeout=60,
                     params={"metric": "latency_median_us", "gpu": GPU}).json()
    points = hist["series"][0]["points"]
    return {"overview": "/", "kernel": f"/kernels/flashcore_wmma?{httpx.QueryParams({'gpu': GPU})}",
            "revision": f"/revisions/{points[-1]['revision_id']}",
            "compare": f"/compare?a={points[-2]['revision_id']}&b={points[-1]['revision_id']}"}


def test_every_page_of_the_installed_wheel_answers_and_draws_its_charts(browser, served):  # noqa: ANN001
    for name, path in _pages(served).items():
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))   # noqa: B023 (read before the next page)
        response = page.goto(served + path, wait_until="networkidle")
        assert response is not None and response.status == 200, (name, response and response.status)
        page.wait_for_selector("body[data-charts-ready]", state="attached")
        traces = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => gd.data.length)")
        if name != "overview":          # the overview is a table; every other page leads with charts
            assert traces and all(n > 0 for n in traces), (name, traces)
        assert errors == [], (name, errors)
        page.close()


def test_the_installed_wheel_serves_its_api_docs(browser, served):  # noqa: ANN001
    page = browser.new_page()
    response = page.goto(served + "/docs", wait_until="networkidle")
    assert response is not None and response.status == 200
    page.wait_for_selector(".swagger-ui .info .title")
    assert "FlashCore Gate" in page.inner_text(".swagger-ui .info .title")
    page.close()
