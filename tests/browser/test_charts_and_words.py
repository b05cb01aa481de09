"""Issue 13 in a real Chromium against a real `gate serve` over the synthetic sample: charts that
fit their values, labels that never overlap, legends of what is drawn, the GPU's peak, words a
person reads, HTML errors, compare by sha or branch."""

from __future__ import annotations

import httpx
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("served-history")]   # conftest.py says why

H100 = "NVIDIA H100 80GB HBM3"
KERNEL_PAGE = "/kernels/flashcore_wmma?gpu=NVIDIA+H100+80GB+HBM3"

# The boxes of every text plotly drew in a chart, grouped: two boxes of different groups, or two
# annotations, must not intersect (1 px of slack for anti-aliasing).
OVERLAPS = """() => {
  const inter = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const out = [];
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const boxes = [];
    const add = (sel, group) => gd.querySelectorAll(sel).forEach((el) => {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && r.height > 0) boxes.push({group, r, text: el.textContent});
    });
    add('.annotation-text-g', 'annotation'); add('.legend .bg', 'legend'); add('.g-gtitle text', 'title');
    add('.g-xtitle text', 'xtitle'); add('.g-ytitle text', 'ytitle'); add('.xtick text', 'xtick');
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if ((a.group !== b.group || a.group === 'annotation') && inter(a.r, b.r))
        out.push(`${gd.id}: ${a.group} "${a.text}" / ${b.group} "${b.text}"`);
    }
  }
  return out;
}"""


def _open(browser, url: str):  # noqa: ANN001, ANN202
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    response = page.goto(url, wait_until="networkidle")
    page.wait_for_selector("body[data-charts-ready]", state="attached")
    return page, errors, response


@pytest.fixture(scope="module")
def points(server: str) -> list[dict]:
    hist = httpx.get(f"{server}/api/v1/kernels/flashcore_wmma/history",
                     params={"metric": "latency_median_us", "gpu": H100}).json()
    return hist["series"][0]["points"]


def test_kernel_charts_have_whole_commit_ticks_fitting_ranges_and_no_overlaps(browser, server):  # noqa: ANN001
    page, errors, _ = _open(browser, server + KERNEL_PAGE)
    axes = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => ({
        id: gd.id, x: gd._fullLayout.xaxis._vals.map(v => v.x), y: gd._fullLayout.yaxis.range,
        log: gd._fullLayout.yaxis.type === 'log'}))""")
    assert errors == []
    for axis in axes:
        assert all(float(x).is_integer() for x in axis["x"]), axis
        assert axis["log"] or axis["y"][0] >= 0, axis
    assert "chart-spills" not in {a["id"] for a in axes}          # no axis spent on all-zero spills
    assert "Spills: 0 in every revision shown" in page.inner_text("#flat-charts")
    assert page.evaluate(OVERLAPS) == []
    page.close()


def test_throughput_charts_draw_the_gpus_peak_and_the_legend_lists_only_what_is_drawn(browser, server):  # noqa: ANN001
    page, errors, _ = _open(browser, server + KERNEL_PAGE)
    # The kernel's own range first: the peak, far above it, is named under the axis, not drawn on it.
    peaks = page.evaluate("""() => [...document.querySelectorAll('[id^=chart-tflops]')]
        .map(gd => ({title: gd._fullLayout.xaxis.title.text, type: gd._fullLayout.yaxis.type,
                     top: gd._fullLayout.yaxis.range[1]}))""")
    assert peaks and all(p["title"].endswith("H100 peak 989.4 TFLOP/s is above this axis") for p in peaks), peaks
    assert all(p["type"] == "linear" and p["top"] < 989.4 / 2 for p in peaks), peaks
    legend = page.inner_text("#page-legend")
    drawn = set(page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .flatMap(gd => gd.data.flatMap(t => (t.customdata || []).map(c => c[4])))"""))
    for verdict in ("accept", "reject", "inconclusive", "incomplete", "error"):
        assert (verdict in legend.split()) == (verdict in drawn), (verdict, legend, drawn)
    assert "cublas" not in legend and "sdpa_flash" in legend and "H100 peak" not in legend   # named under the axis, not drawn
    assert "beyond the GPU's peak" not in legend          # no sample value is beyond it
    assert errors == []
    page.close()


def test_the_revision_page_words_rules_values_gpu_and_the_missing_baseline_profile(browser, server, points):  # noqa: ANN001
    rejected = next(p for p in points if p["verdict"] == "reject")
    page, errors, _ = _open(browser, f"{server}/revisions/{rejected['revision_id']}")
    # The detail sections are folded under the deciding rows; open them, and their charts draw.
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    page.wait_for_function("() => [...document.querySelectorAll('[id$=-ncu]')].every(d => d.data)")
    text = page.inner_text("main")
    assert errors == []
    assert "e+0" not in text and " us" not in text                  # 45.23 ms, 58.1 µs
    assert "within 25" not in text and "meets the floor of 25 %" in text
    assert "status done" not in text and "on any" not in text and "on cpu" not in text
    assert "not run: not run" not in text and "done: done" not in text
    note = page.inner_text("[id^=ncu-baseline-note]")
    # the sample stores no baseline build or profile: the note says the baseline was not profiled and why
    assert "was not profiled: it was not built in this job" in note
    names = page.evaluate("""() => [...document.querySelectorAll('[id$=-ncu]')].map(gd => gd.data.map(t => t.name))""")
    assert names and all(n == [f"candidate {rejected['sha'][:8]}"] for n in names), names
    assert page.evaluate(OVERLAPS) == []
    page.close()


def test_compare_by_sha_prefix_and_branch_with_linear_bars_of_the_change(browser, server, points):  # noqa: ANN001
    page, errors, response = _open(browser, f"{server}/compare?a={points[0]['sha'][:9]}&b=main")
    assert response.status == 200 and errors == []
    heads = page.locator(".two h2 code").all_inner_texts()
    assert heads[0] == points[0]["sha"][:12]
    chart = page.evaluate("""() => { const gd = document.getElementById('chart-compare');
        return {type: gd._fullLayout.xaxis.type, title: gd.layout.title.text,
                changes: gd.data[0].x}; }""")
    assert chart["type"] == "linear" and "(after) against" in chart["title"] and "(before)" in chart["title"]
    tables = " ".join(page.locator(f"#compare-metrics{part}").text_content() or ""
                      for part in ("", "-unjudged", "-unchanged") if page.locator(f"#compare-metrics{part}").count())
    assert "3.277e+04" not in tables and "32 KiB" in tables
    assert H100 in page.inner_text(".two")                           # each card names its GPU
    assert page.evaluate(OVERLAPS) == []
    page.close()


@pytest.mark.parametrize("path", ["/compare?a=not-a-thing&b=1", "/revisions/999999", "/kernels/nope", "/nowhere"])
def test_bad_input_and_missing_pages_are_html_pages_that_say_what_is_wrong(browser, server, path):  # noqa: ANN001
    page = browser.new_page()
    response = page.goto(server + path)
    assert response.status == 404 and response.headers["content-type"].startswith("text/html")
    message = page.inner_text("#compare-problem, #error-message")
    assert message and '"detail":' not in page.content()
    assert page.locator("#synthetic-banner").is_visible()
    page.close()
