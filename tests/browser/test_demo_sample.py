"""`gate demo --sample` is one command that serves a populated dashboard without a GPU, labelled
synthetic at the top of every page; scripts/screenshots.py shoots its four pages (issue 13)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from scripts.png_text import read_text
from tests.browser.conftest import CHROMIUM, REPO, _free_port, answering
from tests.patience import HANG_S

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("demo-sample")]   # conftest.py says why


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """`gate demo --sample` on a free port: its URL and its data directory."""
    tmp = tmp_path_factory.mktemp("demo-sample")
    env = {**os.environ, "GATE_DATA_DIR": str(tmp / "data"), "PYTHONPATH": str(REPO),
           "GATE_DATABASE_URL": f"sqlite:///{tmp / 'real.db'}"}     # must stay untouched
    port = _free_port()
    log = open(tmp / "demo.log", "w")   # noqa: SIM115 (closed below)
    proc = subprocess.Popen([sys.executable, "-m", "gate.cli", "demo", "--sample", "--revisions", "16",
                             "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
    url = f"http://127.0.0.1:{port}"
    try:
        answering(url, proc, tmp / "demo.log")
        assert not (tmp / "real.db").exists()
        yield url, tmp / "data"
    finally:
        proc.terminate()
        proc.wait(timeout=HANG_S)
        log.close()


def test_every_page_of_the_sample_says_synthetic_at_the_top(browser, demo):  # noqa: ANN001
    url, _ = demo
    kernels = httpx.get(url + "/api/v1/kernels").json()
    assert {k["name"] for k in kernels} >= {"flashcore_wmma", "gemm_tiled"}
    rev = kernels[0]["latest"][0]["revision_id"]
    for path in ("/", "/kernels/flashcore_wmma", f"/revisions/{rev}", f"/compare?a={rev - 1}&b={rev}", "/nowhere"):
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        page.goto(url + path, wait_until="networkidle")
        banner = page.locator("#synthetic-banner")
        assert banner.is_visible(), path
        assert "Synthetic sample data" in banner.inner_text()
        assert banner.bounding_box()["y"] < page.locator("main").bounding_box()["y"], path
        assert banner.bounding_box()["y"] < 900                      # in the first screen
        page.close()


def test_every_file_link_of_a_sample_revision_resolves(browser, demo):  # noqa: ANN001
    url, _ = demo
    rev = httpx.get(url + "/api/v1/kernels").json()[0]["latest"][0]["revision_id"]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{url}/revisions/{rev}", wait_until="networkidle")
    links = page.evaluate("""() => [...document.querySelectorAll('a[href^="/api/v1/artifacts/"]')]
        .map(a => [a.getAttribute('href'), a.textContent])""")
    assert any(text == "build log" for _, text in links), links        # the sample writes its build logs
    for href, _ in links:
        reply = httpx.get(url + href)
        assert reply.status_code == 200 and "nvcc" in reply.text, href
    assert page.locator(".files-gone").count() == 0
    page.close()


def test_screenshots_of_the_four_pages_are_written_and_synthetic_data_is_refused(demo, tmp_path):  # noqa: ANN001
    if not Path(CHROMIUM).exists():   # as the browser fixture: the script asks for Chromium before anything else
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    _, data_dir = demo
    database = f"sqlite:///{data_dir / 'sample' / 'gate.db'}"
    script = [sys.executable, str(REPO / "scripts" / "screenshots.py"), "--database-url", database,
              "--data-dir", str(data_dir), "--out", str(tmp_path / "shots"), "--gate-commit", "c" * 40]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    refused = subprocess.run(script, env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "synthetic sample data" in refused.stderr
    done = subprocess.run([*script, "--allow-synthetic"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    shots = {p.name: p.stat().st_size for p in (tmp_path / "shots").glob("*.png")}
    assert set(shots) == {"overview.png", "kernel.png", "revision.png", "compare.png"}
    assert all(size > 20_000 for size in shots.values()), shots
    for shot in (tmp_path / "shots").glob("*.png"):          # what tests/packaging/test_screenshots.py reads
        assert read_text(shot) == {"gate-commit": "c" * 40, "gpu": "NVIDIA H100 80GB HBM3"}, shot.name
