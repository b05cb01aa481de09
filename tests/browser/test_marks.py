"""Issue 28 in a real Chromium against a real `gate serve` over the synthetic sample: every mark
means what it says. Limits on the series their rule judges, markers that match the legend, series
told apart by fill, changes in an engineer's units and coloured by the rule's bound, a revision page
that leads with its deciding rows and links only files that exist, and no page taller than 4,000 px."""

from __future__ import annotations

import re

import httpx
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("served-history")]   # conftest.py says why

H100 = "NVIDIA H100 80GB HBM3"
KERNEL_PAGE = "/kernels/flashcore_wmma?gpu=NVIDIA+H100+80GB+HBM3"
MAX_PAGE_PX = 4000
WIDTH = 1400


def _open(browser, url: str):  # noqa: ANN001, ANN202
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, wait_until="networkidle")
    page.wait_for_selector("body[data-charts-ready]", state="attached")
    return page, errors


@pytest.fixture(scope="module")
def revisions(server: str) -> dict[str, int]:
    """A rejected revision with four jobs, and the two revisions around flashcore_wmma's register step."""
    hist = httpx.get(f"{server}/api/v1/kernels/flashcore_wmma/history",
                     params={"metric": "registers", "gpu": H100}).json()
    points = hist["series"][0]["points"]
    step = next(i for i in range(1, len(points)) if points[i]["value"] != points[i - 1]["value"])
    lat = httpx.get(f"{server}/api/v1/kernels/flashcore_wmma/history",
                    params={"metric": "latency_median_us", "gpu": H100}).json()["series"][0]["points"]
    rejected = [p["revision_id"] for p in lat if p["verdict"] == "reject"]
    four = next(r for r in rejected if len(httpx.get(f"{server}/api/v1/revisions/{r}").json()["jobs"]) == 4)
    return {"rejected": four, "before": points[step - 1]["revision_id"], "after": points[step]["revision_id"]}


def newest_rules(server: str) -> set[str]:
    """The rules of flashcore_wmma's newest verdict on the H100: the charts that may carry verdict symbols."""
    points = httpx.get(f"{server}/api/v1/kernels/flashcore_wmma/history",
                       params={"metric": "registers", "gpu": H100}).json()["series"][0]["points"]
    newest = max(p["revision_id"] for p in points)
    jobs = httpx.get(f"{server}/api/v1/revisions/{newest}").json()["jobs"]
    return {r["rule"] for j in jobs if j["kernel"] == "flashcore_wmma" and j["verdict"]
            for r in j["verdict"]["rules"]}


def test_no_page_is_taller_than_4000_px_at_1400_px(browser, server, revisions):  # noqa: ANN001
    for path in ("/", KERNEL_PAGE, f"/revisions/{revisions['rejected']}",
                 f"/compare?a={revisions['before']}&b={revisions['after']}"):
        page, errors = _open(browser, server + path)
        height = page.evaluate("() => document.documentElement.scrollHeight")
        assert height <= MAX_PAGE_PX, (path, height)
        assert errors == [], path
        page.close()


def test_the_revision_page_leads_with_the_deciding_rows_and_folds_the_unchanged(browser, server, revisions):  # noqa: ANN001
    page, _ = _open(browser, f"{server}/revisions/{revisions['rejected']}")
    jobs = page.evaluate("""() => [...document.querySelectorAll('section.job')].map(job => ({
        verdict: job.querySelector('h2 .badge').textContent.trim(),
        rows: [...job.querySelectorAll('table.rules tbody tr')].map(tr => ({
            decisive: tr.classList.contains('decisive'), outcome: tr.querySelector('.outcome').textContent.trim()})),
        folded: [...job.querySelectorAll('ul.folded li')].map(li => li.textContent),
        timed: job.querySelectorAll('[id*=-t]').length > 0, text: job.innerText}))""")
    assert len(jobs) == 4 and jobs[0]["verdict"] == "reject"          # the deciding job first
    first = jobs[0]["rows"]
    assert first[0]["decisive"] and first[0]["outcome"] == "fail"     # and its deciding row on top
    assert all(r["outcome"] != "pass" for r in first if r["decisive"])
    for job in jobs:
        passing_shown = [r for r in job["rows"] if r["outcome"] == "pass"]
        assert len(job["rows"]) <= 6, job["rows"]                      # not a wall of "+0" rows
        assert job["folded"] or not passing_shown or len(passing_shown) < len(job["rows"])
        assert job["timed"] or "GPU while timing" not in job["text"]   # a section only with data
    assert any(f for j in jobs for f in j["folded"])                   # something was folded
    page.close()


def test_every_file_link_of_the_revision_page_resolves(browser, server, revisions):  # noqa: ANN001
    page, _ = _open(browser, f"{server}/revisions/{revisions['rejected']}")
    links = page.evaluate("""() => [...document.querySelectorAll('a[href^="/api/v1/artifacts/"]')]
        .map(a => a.getAttribute('href'))""")
    for href in links:
        assert httpx.get(server + href).status_code == 200, href
    # The sample records build logs it never wrote: the page says so instead of linking a 404.
    gone = page.locator(".files-gone").all_text_contents()
    assert links or gone
    page.close()


def test_the_mode_bar_never_covers_a_chart_title(browser, server, revisions):  # noqa: ANN001
    for path in (KERNEL_PAGE, f"/revisions/{revisions['rejected']}"):
        page, _ = _open(browser, server + path)
        ids = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].slice(0, 4).map(gd => gd.id)")
        assert ids
        for chart in ids:
            page.locator(f"#{chart}").scroll_into_view_if_needed()
            page.hover(f"#{chart} .nsewdrag")
            hit = page.evaluate("""(id) => {
                const gd = document.getElementById(id), bar = gd.querySelector('.modebar');
                const title = gd.querySelector('.g-gtitle text');
                if (!bar || !title) return null;
                const a = bar.getBoundingClientRect(), b = title.getBoundingClientRect();
                return a.width > 0 && a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
            }""", chart)
            assert hit is False, (path, chart)
        page.close()


def test_markers_agree_with_the_legend_and_series_differ_by_fill(browser, server):  # noqa: ANN001
    page, _ = _open(browser, server + KERNEL_PAGE)
    legend = dict(page.evaluate("""() => [...document.querySelectorAll('#page-legend [data-verdict-symbol]')]
        .map(s => [s.innerText.replace(s.querySelector('.glyph').innerText, '').trim(), s.dataset.verdictSymbol])"""))
    drawn = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => gd.data
        .filter(t => t.meta && t.meta.revisions === 'shared' && t.mode === 'lines+markers')
        .filter(t => Array.isArray(t.marker.symbol))       // series no rule judges carry no verdict symbol
        .map(t => ({fill: t.marker.color,
                    pairs: t.customdata.map((c, i) => [c[4], t.marker.symbol[i], t.marker.line.color[i]])})))""")
    seen = set()
    for traces in drawn:
        for trace in traces:
            for verdict, symbol, outline in trace["pairs"]:
                if symbol == "circle" and outline == trace["fill"]:
                    continue                          # a plain dot: no failing rule judges this figure there
                seen.add(verdict)
                assert legend[verdict] == symbol, (verdict, symbol, legend)
        fills = [t["fill"] for t in traces]
        assert len(set(fills)) == len(fills), fills                     # one fill per series
    assert seen == set(legend)                                          # the legend lists what is drawn
    page.close()


def test_limit_lines_sit_on_the_series_their_rule_judges(browser, server):  # noqa: ANN001
    """The pooled conflict figure is what max_bank_conflict_pct judges: every accepted point is on
    the passing side of its drawn limit, as on every absolute rule's chart."""
    page, _ = _open(browser, server + KERNEL_PAGE)
    charts = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => ({
        id: gd.id, title: gd.layout.title.text,
        limit: (gd.layout.shapes.find(s => s.line && s.line.dash === 'dash') || {}).y0,
        points: gd.data.filter(t => t.mode === 'lines+markers')
                  .flatMap(t => t.y.map((y, i) => [y, t.customdata[i][4]]))}))""")
    floors = {"chart-tensor", "chart-warps", "chart-dram"}
    ceilings = {"chart-conflicts", "chart-registers", "chart-smem", "chart-sectors"}
    judged = [c for c in charts if c["id"] in floors | ceilings and c["limit"] is not None]
    assert any(c["id"] == "chart-conflicts" for c in judged), [c["id"] for c in charts]
    assert "loads + stores" in page.evaluate("() => document.getElementById('chart-conflicts').layout.yaxis.title.text")
    for c in judged:
        for y, verdict in c["points"]:
            if verdict == "accept":
                assert (y >= c["limit"]) if c["id"] in floors else (y <= c["limit"]), (c["id"], y, c["limit"])
    page.close()


def test_kernel_axes_show_shas_own_units_and_every_static_figure(browser, server):  # noqa: ANN001
    page, _ = _open(browser, server + KERNEL_PAGE)
    axes = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => ({
        id: gd.id, ticks: gd._fullLayout.xaxis._vals.map(v => v.text), ytitle: gd.layout.yaxis.title.text,
        labels: gd.layout.annotations.map(a => a.text)}))""")
    ids = {a["id"] for a in axes}
    assert {"chart-registers", "chart-smem"} <= ids                      # static figures of the CPU path
    for a in axes:
        assert a["ticks"] and all(re.fullmatch(r"[0-9a-f]{7}", t) for t in a["ticks"]), a
    for a in axes:                                # a line's label is in the unit its axis is labelled in
        unit = re.search(r"\((µs|ms)\)", a["ytitle"] or "")
        if unit:
            other = "ms" if unit.group(1) == "µs" else "µs"
            assert not any(t.endswith(" " + other) for t in a["labels"]), a
    page.close()


def test_the_kernel_page_opens_on_the_gpu_the_overview_lists_first(browser, server):  # noqa: ANN001
    page, _ = _open(browser, server + "/")
    card = page.locator("a.card", has_text="flashcore_wmma")
    first = card.locator("table.mini tr td").first.inner_text()
    page.goto(server + "/kernels/flashcore_wmma", wait_until="networkidle")
    chosen = page.locator("select[name=gpu] option:checked").inner_text()
    assert chosen.startswith(first), (first, chosen)
    page.close()


def test_recent_revision_badges_name_kernel_and_gpu(browser, server):  # noqa: ANN001
    page, _ = _open(browser, server + "/")
    badges = page.locator("div.verdicts .vb").all_inner_texts()
    assert badges and all(re.search(r"^(accept|reject|inconclusive|incomplete|error|—) \w+ \S+$", b) for b in badges), badges
    page.close()


def test_compare_changes_read_in_engineer_units_coloured_by_the_bound(browser, server, revisions):  # noqa: ANN001
    page, errors = _open(browser, f"{server}/compare?a={revisions['before']}&b={revisions['after']}")
    rows = page.evaluate("""() => [...document.querySelectorAll('#compare-metrics tbody tr, #compare-metrics-unjudged tbody tr, #compare-metrics-unchanged tbody tr')]
        .map(tr => { const td = tr.querySelectorAll('td');
                     return {name: td[2].textContent, series: td[4].textContent, change: td[7].textContent.trim(),
                             tone: td[7].className}; })""")
    assert errors == []
    by = {}
    for r in rows:
        by.setdefault(r["name"], []).append(r)
    assert all(re.fullmatch(r"[+-]\d+ regs/thread|n/a", r["change"]) for r in by["registers"]), by["registers"]
    moved = [r for r in by["registers"] if r["change"] not in ("+0 regs/thread", "n/a")]
    assert moved and all("bad" in r["tone"] for r in moved if r["change"].startswith("+"))   # a ceiling
    assert all(r["change"].endswith(" %") or r["change"] == "n/a" for r in by["latency_median_us"])
    assert all(r["change"].endswith(" pts") or r["change"] == "n/a" for r in by.get("tensor_pipe_pct", []))
    for r in by.get("tensor_pipe_pct", []):                               # a floor: down is worse
        if r["change"].startswith("-") and r["tone"].split()[2:]:        # coloured at all
            assert r["tone"].split()[2] == "bad", r
    chart = page.evaluate("""() => { const gd = document.getElementById('chart-compare');
        return {type: gd._fullLayout.xaxis.type, x: gd.data[0].x, colors: gd.data[0].marker.color}; }""")
    assert chart["type"] == "linear"
    for change, color in zip(chart["x"], chart["colors"]):
        if change is not None and change >= 1:
            assert color == "#cf222e", (change, color)                   # slower is worse: red
        if change is not None and change <= -1:
            assert color == "#1a7f37", (change, color)
    page.close()


def test_a_cards_reason_is_whole_and_names_the_deciding_row(browser, server):  # noqa: ANN001
    kernels = httpx.get(server + "/api/v1/kernels").json()
    page, _ = _open(browser, server + "/")
    shown = page.locator("a.card td.reason").all_inner_texts()
    stored = [v["reason"] for k in kernels for v in k["latest"]]
    assert len(shown) == len(stored)
    for text, reason in zip(shown, stored):
        assert text and reason.endswith(text.strip()), (text, reason)   # all of it, its verdict word aside
    page.close()


def test_the_sass_opcode_chart_draws_each_family_the_history_stores(browser, server, revisions):  # noqa: ANN001
    """Issue 28's static figures, SASS included: one chart per arch, a series per opcode family with the
    counts the history API returns for it, verdict markers as on the registers chart, and the
    families the kernel's code lacks named under the charts instead of drawn at 0."""
    page, errors = _open(browser, server + KERNEL_PAGE)
    charts = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('.js-plotly-plot')]
        .filter(gd => gd.id.startsWith('chart-sass-') || gd.id === 'chart-registers')
        .map(gd => [gd.id, {title: gd.layout.title.text, ytitle: gd.layout.yaxis.title.text,
                            legend: gd.data.filter(t => t.mode === 'lines+markers' && t.showlegend !== false)
                                           .map(t => t.name),
                            series: Object.fromEntries(gd.data.filter(t => t.mode === 'lines+markers')
                                .map(t => [t.name, {y: t.y, symbols: t.marker.symbol, fill: t.marker.color}]))}]))""")
    assert errors == []
    families = ["tensor core", "shared memory", "global memory", "barriers", "all instructions"]
    assert sorted(c for c in charts if c.startswith("chart-sass-")) == ["chart-sass-sm_80", "chart-sass-sm_90"]
    for arch in ("sm_80", "sm_90"):
        chart = charts[f"chart-sass-{arch}"]
        assert chart["title"] == f"SASS opcodes · {arch}" and chart["ytitle"] == "instructions (all functions)"
        assert chart["legend"] == families                    # the sample's code has no async copy, no SHFL
        for name, metric in (("tensor core", "sass_tensor_core"), ("shared memory", "sass_shared"),
                             ("all instructions", "sass_total")):
            hist = httpx.get(f"{server}/api/v1/kernels/flashcore_wmma/history",
                             params={"metric": metric, "gpu": H100}).json()
            (stored,) = [s for s in hist["series"] if s["series"] == arch]
            assert chart["series"][name]["y"] == [p["value"] for p in stored["points"]], (arch, name)
        # The same revisions carry the same verdict markers as the registers chart.
        # Verdict symbols only where a rule reads the chart's figures (require_sass reads opcode counts);
        # then the same revisions carry the same markers as the registers chart (equal series are one
        # trace there, named "sm_80 = sm_90").
        rules = newest_rules(server)
        registers = next(v for k, v in charts["chart-registers"]["series"].items() if arch in k.split(" = "))
        symbols = chart["series"]["all instructions"]["symbols"]
        assert symbols == (registers["symbols"] if "require_sass" in rules else "circle"), (arch, rules)
    shared = charts["chart-sass-sm_90"]["series"]["shared memory"]["y"]
    assert min(shared) < max(shared)                          # the ldmatrix commit added LDSM
    assert len({s["fill"] for s in charts["chart-sass-sm_80"]["series"].values()}) == len(families)
    flat = page.inner_text("#flat-charts")
    assert "SASS opcodes · sm_80: async copies, shuffles: 0 in every revision shown, so not drawn." in flat
    page.close()
