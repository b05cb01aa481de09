"""Every page in a real Chromium against a real `gate serve`: no console errors, charts drawn,
a click on a point opens its revision, screenshots written."""

from __future__ import annotations

import httpx
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("served-history")]   # conftest.py says why

PAGES = {"overview": "/", "kernel": "/kernels/flashcore_wmma?gpu=NVIDIA+H100+80GB+HBM3",
         "revision": "/revisions/{rejected}", "compare": "/compare?a={before}&b={after}"}


@pytest.fixture(scope="module")
def ids(server: str) -> dict[str, int]:
    """A rejected revision of flashcore_wmma and the revisions around the ldmatrix step."""
    hist = httpx.get(f"{server}/api/v1/kernels/flashcore_wmma/history",
                     params={"metric": "latency_median_us", "gpu": "NVIDIA H100 80GB HBM3"}).json()
    points = hist["series"][0]["points"]
    step = hist["series"][0]["change_points"][0]["x"]
    rejected = next(p["revision_id"] for p in points if p["verdict"] == "reject")
    return {"rejected": rejected, "before": points[step - 1]["revision_id"],
            "after": points[step]["revision_id"]}


def _open(browser, url: str):  # noqa: ANN001, ANN202
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, wait_until="networkidle")
    page.wait_for_selector("body[data-charts-ready]", state="attached")
    return page, errors


@pytest.mark.parametrize("name", list(PAGES))
def test_page_loads_without_console_errors_and_draws_its_charts(browser, server, ids, name,
                                                                screenshot_dir):  # noqa: ANN001
    page, errors = _open(browser, server + PAGES[name].format(**ids))
    traces = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
                                     .map(gd => gd.data.length)""")
    page.screenshot(path=str(screenshot_dir / f"{name}.png"), full_page=name != "revision")
    assert errors == []
    assert "Synthetic sample data" in page.inner_text("#synthetic-banner")   # at the top
    if name != "overview":
        assert traces and all(n > 0 for n in traces), traces
    page.close()


def test_kernel_page_marks_the_ldmatrix_step_as_a_change_point(browser, server):  # noqa: ANN001
    page, _ = _open(browser, server + PAGES["kernel"])
    labels = page.evaluate("""() => document.getElementById('chart-latency-b1_h8_s512_d64')
                                     .layout.annotations.map(a => a.text)""")
    assert any(t.startswith("change -2") for t in labels), labels
    page.close()


def test_clicking_a_point_opens_its_revision(browser, server):  # noqa: ANN001
    page, errors = _open(browser, server + PAGES["kernel"])
    page.evaluate("() => document.getElementById('chart-latency-b1_h8_s512_d64').scrollIntoView()")
    # The pixel position of point 10 of the first trace, from plotly's own axes.
    x, y, rev = page.evaluate("""() => {
        const gd = document.getElementById('chart-latency-b1_h8_s512_d64');
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, t = gd.data[0];
        const box = gd.querySelector('.nsewdrag').getBoundingClientRect();
        return [box.left + xa.l2p(t.x[10]), box.top + ya.l2p(t.y[10]), t.customdata[10][0]];
    }""")
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.wait_for_url(f"**/revisions/{rev}")
    assert errors == []
    page.close()


def test_kernel_page_hover_has_each_points_revision_details(browser, server):  # noqa: ANN001
    page, errors = _open(browser, server + PAGES["kernel"])
    rows = page.evaluate("""() => document.getElementById('chart-latency-b1_h8_s512_d64')
                                   .data[0].customdata.slice(0, 3)""")
    assert errors == []
    for rev_id, sha, date, message, verdict, *_ in rows:
        assert isinstance(rev_id, int) and len(sha) == 8 and date and message
        assert verdict in ("accept", "reject", "inconclusive", "incomplete", "error", "no verdict")
    page.close()
