"""Screenshots of the dashboards for the README: overview, kernel, revision and compare pages of a
database that holds a real GPU run, taken in headless Chromium.

    python scripts/screenshots.py --database-url sqlite:///run/gate.db [--data-dir run/data]
                                  [--out docs/screenshots] [--kernel NAME] [--gate-commit SHA]

Starts `gate serve --no-executor` on a free loopback port over that database (migrating it to the
current schema, so point it at a copy), picks the kernel whose newest verdict was measured on a GPU,
its newest revision (a rejected one when the last 20 hold one) and the two revisions around its
biggest change point (else its last two), and writes overview.png, kernel.png, revision.png and
compare.png, each page whole (full height), and source-lines.png, the revision's first source view
(docs/source-lines.md), when it has one. Every
page it shoots names the GPU the numbers come from, and each PNG records in its metadata (tEXt chunks,
scripts/png_text.py) that GPU and the gate commit whose rules made the verdicts (`--gate-commit`,
default: this checkout's HEAD, which must then have no uncommitted change under gate/), so
tests/packaging/test_screenshots.py fails once the rule code is newer than the pictures.

A database of synthetic sample data, or one whose verdicts all come from a machine without a GPU,
is refused: the README's pictures must show measurements (`--allow-synthetic` is for tests).
Needs Debian's chromium (`apt-get install chromium`) and playwright (the test extra).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from png_text import write_text

REPO = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1360, "height": 900}
NO_GPU_KINDS = ("cpu", "any")      # gate.domain.wording: NO_GPU, ANY_GPU
RECENT = 20
COMMIT_KEY, GPU_KEY = "gate-commit", "gpu"     # the PNG tEXt keywords tests/packaging reads


class ScreenshotError(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(database_url: str, data_dir: Path, log_path: Path) -> tuple[subprocess.Popen, str]:
    """`gate serve --no-executor` on a free port; returns once /healthz answers."""
    port = _free_port()
    env = {**os.environ, "GATE_DATABASE_URL": database_url, "GATE_DATA_DIR": str(data_dir),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("GATE_API_TOKEN", None)
    log = open(log_path, "w")   # noqa: SIM115 (the server writes to it until it stops)
    proc = subprocess.Popen([sys.executable, "-m", "gate.cli", "serve", "--no-executor", "--port", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=log_path.parent)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        if proc.poll() is not None:
            raise ScreenshotError(f"gate serve exited:\n{log_path.read_text()}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise ScreenshotError(f"gate serve did not answer on {url}:\n{log_path.read_text()}")


def choose_pages(url: str, kernel: str | None = None) -> tuple[dict[str, str], str]:
    """The four pages to shoot (name -> path), all about one kernel measured on a GPU, and that GPU."""
    kernels = httpx.get(url + "/api/v1/kernels", timeout=30).json()
    measured = [(v["revision_id"], k["name"], v["gpu_kind"]) for k in kernels for v in k["latest"]
                if v["gpu_kind"] not in NO_GPU_KINDS and (kernel is None or k["name"] == kernel)]
    if not measured:
        raise ScreenshotError("no verdict in this database was measured on a GPU"
                              + (f" for kernel {kernel!r}" if kernel else "")
                              + ": copy back the database of a GPU run")
    _, name, gpu = max(measured)
    hist = httpx.get(f"{url}/api/v1/kernels/{name}/history", timeout=60,
                     params={"metric": "latency_median_us", "gpu": gpu}).json()
    series = max(hist["series"], key=lambda s: len(s["points"]))
    points = series["points"]
    if not points:
        raise ScreenshotError(f"kernel {name!r} has no latency history on {gpu}")
    recent = points[-RECENT:]
    shown = next((p for p in reversed(recent) if p["verdict"] == "reject"), points[-1])
    changes = sorted(series["change_points"], key=lambda c: abs(c["shift_pct"]))
    if changes and 0 < changes[-1]["x"] < len(points):
        at = next(i for i, p in enumerate(points) if p["x"] >= changes[-1]["x"])
        before, after = points[max(at - 1, 0)], points[at]
    else:
        before, after = points[-2] if len(points) > 1 else points[-1], points[-1]
    return {"overview": "/", "kernel": f"/kernels/{name}?{httpx.QueryParams({'gpu': gpu})}",
            "revision": f"/revisions/{shown['revision_id']}",
            "compare": f"/compare?a={before['revision_id']}&b={after['revision_id']}"}, gpu


def shoot(url: str, pages: dict[str, str], out: Path, chromium: str, allow_synthetic: bool) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            for name, path in pages.items():
                page = browser.new_page(viewport=VIEWPORT)
                page.goto(url + path, wait_until="networkidle")
                page.wait_for_selector("body[data-charts-ready]", state="attached", timeout=30_000)
                if page.locator("#synthetic-banner").count() and not allow_synthetic:
                    raise ScreenshotError("this database holds synthetic sample data: the README's "
                                          "screenshots must come from a GPU run")
                target = out / f"{name}.png"
                page.screenshot(path=str(target), full_page=True)
                written.append(target)
                if name == "revision" and (lines := _source_view(page, out / "source-lines.png")):
                    written.append(lines)
                page.close()
        finally:
            browser.close()
    return written


def _source_view(page, target: Path) -> Path | None:  # noqa: ANN001  a playwright Page
    """The revision page's first source view (its heading and its table of lines: docs/source-lines.md)
    on its own, or None when the revision has none."""
    tables = page.locator("table.source-lines")
    if not tables.count():
        return None
    table = tables.first
    heading = page.locator("h3:has(+ table.source-lines)").first
    top, bottom = heading.bounding_box(), table.bounding_box()
    if top is None or bottom is None:
        return None
    left = min(top["x"], bottom["x"]) - 8
    clip = {"x": max(left, 0), "y": max(top["y"] - 8, 0), "width": max(top["width"], bottom["width"]) + 16,
            "height": bottom["y"] + bottom["height"] - top["y"] + 16}
    page.screenshot(path=str(target), full_page=True, clip=clip)
    return target


def gate_commit() -> str:
    """This checkout's HEAD, refused when the rule code it runs differs from that commit."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    try:
        head, changed = git("rev-parse", "HEAD"), git("status", "--porcelain", "--", "gate")
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ScreenshotError(f"cannot read this checkout's commit ({exc}): pass --gate-commit SHA") from exc
    if changed:
        raise ScreenshotError("gate/ has uncommitted changes, so no commit names the rules these pages show: "
                              "commit them, or pass --gate-commit SHA of the code that made the database")
    return head


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True, help="the database of a GPU run (a copy: it is migrated)")
    parser.add_argument("--data-dir", type=Path, default=None, help="its GATE_DATA_DIR (artifacts); default: a temp dir")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--kernel", default=None, help="the kernel to show (default: the newest measured)")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--gate-commit", default=None,
                        help="the gate commit that made the database's verdicts (default: this checkout's HEAD)")
    parser.add_argument("--allow-synthetic", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not Path(args.chromium).exists():
        print(f"screenshots: no Chromium at {args.chromium} (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="gate-shots-") as tmp:
        data_dir = args.data_dir or Path(tmp) / "data"
        proc, url = None, ""
        try:
            commit = args.gate_commit or gate_commit()
            proc, url = start_server(args.database_url, data_dir, Path(tmp) / "serve.log")
            pages, gpu = choose_pages(url, args.kernel)
            written = shoot(url, pages, args.out, args.chromium, args.allow_synthetic)
            for path in written:
                write_text(path, {COMMIT_KEY: commit, GPU_KEY: gpu})
        except ScreenshotError as exc:
            print(f"screenshots: {exc}", file=sys.stderr)
            return 2
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
