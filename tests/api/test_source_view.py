"""The revision page's source view: the lines that got slower, highlighted among their neighbours,
from the stored profile stages, and linked from the deciding rule."""

from __future__ import annotations

from gate.api.pages import templates
from gate.api.source_view import source_views
from gate.domain.results import ProfileResult, StageStatus
from gate.domain.source_lines import KernelSourceProfile, LineCounters, SourceLine
from tests.verdict.test_lines import FILE, baseline, conflicting_candidate


def stored(*launches: KernelSourceProfile, status: str = "passed") -> ProfileResult:
    return ProfileResult(StageStatus(status), source=list(launches))


def with_neighbours() -> KernelSourceProfile:
    """The conflicting candidate plus a counted line next to the hot one and one far away."""
    launch = conflicting_candidate()
    launch.lines += [SourceLine(FILE, 142, "kf_next = kf;", LineCounters(0, 0, 0, 10)),
                     SourceLine(FILE, 300, "out[i] = acc;", LineCounters(0, 0, 0, 10))]
    launch.lines.sort(key=lambda ln: ln.line)
    return launch


def test_the_hot_line_is_highlighted_among_its_counted_neighbours():
    (view,) = source_views(7, stored(with_neighbours()), stored(baseline()))
    assert view.anchor == "lines-7-0" and view.kernel == "flashcore_mma_fwd_kernel"
    assert [(r.line, r.hot) for r in view.rows] == [(141, True), (142, False)]   # 121 and 300 are far
    hot = view.rows[0]
    assert hot.text.startswith("ldmatrix_x4") and "+90,000 bank-conflict wavefronts" in hot.why
    assert "against the baseline" in view.heading


def test_no_view_without_a_passed_candidate_profile_or_source_counters():
    assert source_views(1, None, None) == []
    assert source_views(1, stored(conflicting_candidate(), status="failed"), stored(baseline())) == []
    assert source_views(1, stored(), stored(baseline())) == []


def test_a_failed_baseline_profile_gives_the_hottest_lines():
    (view,) = source_views(1, stored(conflicting_candidate()), stored(baseline(), status="error"))
    assert "the baseline was not profiled" in view.heading


def test_the_template_marks_the_hot_rows_and_gaps():
    (view,) = source_views(7, stored(with_neighbours()), stored(baseline()))
    view.rows[1].gap_before = True
    html = templates.get_template("_source_lines.html").render(views=[view])
    assert 'id="lines-7-0"' in html
    assert html.count('class="hot"') == 1 and "&hellip;" in html
    assert "ldmatrix_x4(kf, &amp;ks[(lane % 16) * kRow + k0]);" in html      # escaped source text


def test_the_deciding_rule_links_to_the_source_view():
    page = (templates.env.loader.get_source(templates.env, "revision.html"))[0]
    assert 'href="#{{ v.source_views[0].anchor }}"' in page and '{% include "_source_lines.html" %}' in page
