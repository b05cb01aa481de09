"""Issue 45, items 2 and 3 in a real Chromium against a real `gate serve` over the synthetic sample:
every mark of a kernel chart says whose it is, and the compare page reads in an engineer's units and
colours only what a rule of that kernel judges."""

from __future__ import annotations

import httpx
import pytest

from gate.read_models.compare import judged_metrics
from gate.domain.codec import from_json
from gate.domain.rule_catalog import JUDGES
from gate.figures.kernel_page import GROUPS, Group
from gate.figures.palette import VERDICT_MARK
from gate.domain.verdict import RuleRow
from tests.browser.test_marks import H100, KERNEL_PAGE, _open, newest_rules

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("served-history")]   # conftest.py says why


def _charts(page) -> list[dict]:  # noqa: ANN001
    return page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => ({
        id: gd.id, log: gd._fullLayout.yaxis.type === 'log', range: gd._fullLayout.yaxis.range,
        ticks: (gd._fullLayout.yaxis._vals || []).map(v => v.x),
        changes: (gd.layout.annotations || []).map(a => a.text).filter(t => t.startsWith('change')),
        series: gd.data.filter(t => t.mode === 'lines+markers').map(t => ({name: t.name, x: t.x, y: t.y,
                                                                           symbol: t.marker.symbol}))}))""")


def test_every_mark_of_a_kernel_chart_says_whose_it_is(browser, server):  # noqa: ANN001
    page, errors = _open(browser, server + KERNEL_PAGE)
    charts = _charts(page)
    assert errors == [] and charts
    rules = newest_rules(server)
    assert rules, "the newest verdict has rules"
    for chart in charts:
        drawn = [(tuple(s["x"]), tuple(s["y"])) for s in chart["series"]]
        assert len(set(drawn)) == len(drawn), (chart["id"], [s["name"] for s in chart["series"]])  # none hidden
        if chart["id"].startswith(("dram", "warps", "sass")) and not rules & {"min_dram_pct"}:
            for s in chart["series"]:                                # no rule judges them: no verdict symbol
                assert not isinstance(s["symbol"], list) or "x" not in s["symbol"], (chart["id"], s["name"])
        if len(chart["series"]) > 1:
            assert all(t.endswith(")") for t in chart["changes"]), (chart["id"], chart["changes"])
        if chart["log"]:
            # A labelled tick in every decade: no stretch of the axis wider than half a decade unlabelled.
            low, high = chart["range"]
            ticks = sorted(t for t in chart["ticks"] if low <= t <= high)
            edges = [low, *ticks, high]
            assert ticks and max(b - a for a, b in zip(edges, edges[1:])) <= 0.5, (chart["id"], chart["range"], ticks)
        elif chart["series"] and chart["range"]:
            ys = [y for s in chart["series"] for y in s["y"] if y is not None]
            low, high = chart["range"]
            assert high - low >= 0.19 * max(abs(v) for v in ys) or max(ys) == 0, (chart["id"], chart["range"])
    page.close()


def test_compare_reads_ratios_in_percent_and_colours_only_what_a_rule_judges(browser, server):  # noqa: ANN001
    lat = httpx.get(f"{server}/api/v1/kernels/flashcore_wmma/history",
                    params={"metric": "latency_median_us", "gpu": H100}).json()["series"][0]["points"]
    a, b = lat[-2]["revision_id"], lat[-1]["revision_id"]
    judged: dict[tuple[str, str], frozenset[str]] = {}
    for rev in (a, b):
        for job in httpx.get(f"{server}/api/v1/revisions/{rev}").json()["jobs"]:
            if job.get("verdict"):
                key = (job["kernel"], job["verdict"]["gpu_kind"])
                rows = from_json(list[RuleRow], job["verdict"]["rules"], path="rules")
                judged[key] = judged.get(key, frozenset()) | judged_metrics(rows)
    page, errors = _open(browser, f"{server}/compare?a={a}&b={b}")
    rows = page.evaluate("""() => [...document.querySelectorAll('table.grid tbody tr')].map(tr => {
        const td = tr.querySelectorAll('td');
        return {kernel: td[0].textContent, gpu: td[1].textContent, name: td[2].textContent,
                change: td[7].textContent.trim(), tone: td[7].className}; })""")
    assert errors == [] and rows
    for r in rows:
        if r["name"] == "latency_ratio":
            assert r["change"].endswith(" %") or r["change"] == "n/a", r          # never "+0.0979 x"
        assert not r["change"].endswith(" x"), r
        if "good" in r["tone"] or "bad" in r["tone"]:
            names = set().union(*(v for (kernel, _), v in judged.items() if kernel == r["kernel"]))
            assert r["name"] in names, r                                           # a rule of the kernel
    page.close()


def _judging(chart_id: str) -> tuple[Group, frozenset[str]]:
    """The group of a chart id and the rules whose failing rows may mark its points: the catalogue's
    rules of its figures, its own rule, and for throughput the latency rule (the same time, inverted)."""
    key = chart_id.removeprefix("chart-")
    group = max((g for g in GROUPS if key == g.key or key.startswith(g.key + "-")), key=lambda g: len(g.key))
    names = {m.value for m in group.metrics}
    rules = {r for r, judged in JUDGES.items() if judged & names} | ({group.rule} if group.rule else set())
    return group, frozenset(rules | ({"max_latency_regression_pct"} if group.key == "tflops" else set()))


def test_a_reject_marker_sits_only_where_a_failing_rule_judges_the_charts_figure(browser, server):  # noqa: ANN001
    """Issue 45 item 2, per point: a revision rejected by latency wears its reject on the latency charts,
    not on registers or bank conflicts; each marked point is checked against its revision's stored rows."""
    page, errors = _open(browser, server + KERNEL_PAGE)
    charts = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => ({id: gd.id,
        series: gd.data.filter(t => t.mode === 'lines+markers' && Array.isArray(t.marker.symbol)).map(t => ({
            name: t.name, symbols: t.marker.symbol, points: t.customdata.map(c => [c[0], c[4]])}))}))""")
    page.close()
    assert errors == [] and charts
    rows_of: dict[int, list[dict]] = {}
    marked = plain = 0
    for chart in charts:
        group, judging = _judging(chart["id"])
        for s in chart["series"]:
            shapes = {chart["id"].split("-", 2)[-1]} if group.per_shape else (
                {""} if group.per_arch else set(s["name"].split(" = ")))
            for symbol, (rev, verdict) in zip(s["symbols"], s["points"]):
                if verdict != "reject":
                    continue
                if rev not in rows_of:
                    jobs = httpx.get(f"{server}/api/v1/revisions/{rev}").json()["jobs"]
                    rows_of[rev] = [r for j in jobs if j["kernel"] == "flashcore_wmma" and j["verdict"]
                                    and j["verdict"]["gpu_kind"] == H100 for r in j["verdict"]["rules"]]
                failing = {r["rule"] for r in rows_of[rev] if r["outcome"] == "fail"
                           and (group.per_arch or r.get("shape", "") in shapes | {""})}
                if symbol == VERDICT_MARK["reject"][0]:
                    marked += 1
                    assert failing & judging, (chart["id"], s["name"], rev, failing)
                else:
                    plain += 1
                    assert not failing & judging, (chart["id"], s["name"], rev, failing)
    assert marked and plain, (marked, plain)     # the sample has both: a reject worn and one left plain
