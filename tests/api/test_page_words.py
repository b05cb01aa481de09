"""Pages a person trusts at a glance (issue 13): HTML errors on page routes, JSON on the API,
compare by id, sha or branch, the GPU of the newest runs first, counts in the right number,
banners that say what was not measured."""

from __future__ import annotations

import html
import re
from datetime import datetime

from gate.sample import seed_judged_history
from gate.storage.samples import JudgedJob, JudgedRevision, Samples
from gate.storage.unit import UnitOfWork

KERNEL = "flashcore_wmma"


def _seed(session_factory, revisions: int = 6) -> None:  # noqa: ANN001
    with session_factory() as session:
        seed_judged_history(UnitOfWork(session), revisions=revisions, kernels=[KERNEL], a100=False, stages=True,
                            queue=False)


def _revisions(client) -> list[dict]:  # noqa: ANN001
    hist = client.get(f"/api/v1/kernels/{KERNEL}/history", params={"metric": "latency_median_us"}).json()
    return hist["series"][0]["points"]


def test_a_missing_revision_kernel_or_page_is_an_html_404_and_the_api_keeps_json(make_client, session_factory):  # noqa: ANN001
    _seed(session_factory)
    client = make_client(embedded_executor=False)
    for path in ("/revisions/999999", "/kernels/nope", "/revisions/not-a-sha-or-branch"):
        page = client.get(path)
        assert page.status_code == 404 and page.headers["content-type"].startswith("text/html"), path
        assert 'id="error-message"' in page.text and '"detail"' not in page.text
    assert "no kernel 'nope' has a verdict yet" in html.unescape(client.get("/kernels/nope").text)
    browser_page = client.get("/nothing-here", headers={"accept": "text/html"})
    assert browser_page.status_code == 404 and "text/html" in browser_page.headers["content-type"]
    # Accept sent as two fields, HTML in the second (RFC 9110 allows either form): still a page
    two_fields = client.get("/nothing-here", headers=[("accept", "application/xml"), ("accept", "text/html")])
    assert two_fields.status_code == 404 and "text/html" in two_fields.headers["content-type"]
    assert client.get("/nothing-here").headers["content-type"] == "application/json"
    api = client.get("/api/v1/revisions/999999")
    assert api.status_code == 404 and api.json() == {"detail": "no revision 999999"}


def test_compare_takes_ids_shas_prefixes_and_branches(make_client, session_factory):  # noqa: ANN001
    _seed(session_factory)
    client = make_client(embedded_executor=False)
    first, last = _revisions(client)[0], _revisions(client)[-1]
    by_id = client.get("/compare", params={"a": first["revision_id"], "b": last["revision_id"]})
    assert by_id.status_code == 200
    headers = re.findall(r'<h2><a href="/revisions/(\d+)">', by_id.text)
    for a, b in ((first["sha"], last["sha"][:7]), (first["sha"][:10], "main")):
        page = client.get("/compare", params={"a": a, "b": b})
        assert page.status_code == 200, page.text
        assert re.findall(r'<h2><a href="/revisions/(\d+)">', page.text) == headers


def test_compare_with_bad_input_says_so_in_html_never_raw_json(make_client, session_factory):  # noqa: ANN001
    _seed(session_factory)
    client = make_client(embedded_executor=False)
    for params, words in (({"a": "zzz", "b": "1"}, "no revision matches 'zzz'"),
                          ({"a": "1"}, "no revision given"),
                          ({}, "Name two revisions")):
        page = client.get("/compare", params=params)
        assert page.headers["content-type"].startswith("text/html")
        assert words in html.unescape(page.text) and '"detail"' not in page.text


def test_an_ambiguous_sha_prefix_is_named_as_such(make_client, session_factory):  # noqa: ANN001
    _seed(session_factory)
    with session_factory() as session:
        for sha in ("abcd" + "1" * 36, "abcd" + "2" * 36):
            Samples(session).append_judged_revision(KERNEL, sha=sha)
        session.commit()
    page = make_client(embedded_executor=False).get("/compare", params={"a": "abcd", "b": "abcd1"})
    assert page.status_code == 404 and "'abcd' is ambiguous" in html.unescape(page.text)


def test_the_kernel_page_opens_on_the_gpu_of_the_newest_runs(make_client, session_factory):  # noqa: ANN001
    _seed(session_factory, revisions=8)        # eight on the H100
    with session_factory() as session:
        Samples(session).append_judged_revision(KERNEL, gpu_kind="NVIDIA H200")   # one newer, on an H200
        session.commit()
    page = make_client(embedded_executor=False).get(f"/kernels/{KERNEL}").text
    assert re.search(r'<option value="NVIDIA H200" selected>NVIDIA H200 \(newest runs\)', page)
    assert "1 revision on <b>NVIDIA H200</b>" in page


def test_verdicts_without_a_gpu_are_explained_at_the_top(make_client, session_factory):  # noqa: ANN001
    with session_factory() as session:
        samples = Samples(session)
        repo = samples.add_sample_repository(name="demo", url="/tmp/demo")
        (rev,) = samples.add_judged_revisions(repo, [JudgedRevision("c" * 40, None, "a", "m", datetime(2025, 1, 1),
                                                                    datetime(2025, 1, 1))])
        samples.add_judged_jobs([JudgedJob(revision_id=rev, kernel="k", gpu_kind="cpu", worker="w",
                                           queued_at=datetime(2025, 1, 1), started_at=datetime(2025, 1, 1),
                                           finished_at=datetime(2025, 1, 1), verdict="incomplete",
                                           reason="incomplete: build: not run: no CUDA device", rules=[],
                                           fingerprint={})])
        session.commit()
    client = make_client(embedded_executor=False)
    for path in ("/", f"/revisions/{rev}", "/kernels/k"):
        page = client.get(path).text
        top = page.index('id="unmeasured-banner"')
        assert top < page.index("<main>"), path
        assert "No GPU measured these revisions" in page and "correctness, timing and the Nsight Compute" in page
    revision = client.get(f"/revisions/{rev}").text
    assert "without a GPU (compiled, not measured)" in revision
    assert "on no GPU" not in revision and "on cpu" not in revision
    # no branch: the line under the sha names the repository and the author, no empty slot between
    assert re.search(r'<p class="muted">[^<]* \u00b7 a\s', revision) and "\u00b7  \u00b7" not in revision
    assert 'data-field="status"' not in revision          # a done revision shows its verdict only


def test_words_that_sent_a_reader_the_wrong_way():
    """Issue 45, item 4: an increase rule's threshold is the increase it allows, "cpu" after "on",
    an empty part of a line, and a passing limit row that has no baseline."""
    from gate.domain.rule_words import threshold_words
    from gate.domain.verdict import RuleOutcome, RuleRow
    from gate.domain.wording import joined, on_gpu_words
    from gate.figures.rule_table import rule_table

    increase = RuleRow("max_registers_increase", RuleOutcome.PASS, "sm_90: +2 <= +8", value=40, threshold=8,
                       baseline=38, delta=2, unit="registers")
    limit = RuleRow("max_registers", RuleOutcome.PASS, "sm_90: 40 <= 128", value=40, threshold=128, unit="registers")
    assert threshold_words(increase) == "+8 registers"
    assert threshold_words(limit) == "128 registers"
    assert on_gpu_words("cpu") == "without a GPU (compiled, not measured)" and on_gpu_words("H200") == "on H200"
    assert joined("mygemm", "", "t") == "mygemm \u00b7 t" and joined(None, "t") == "t"
    (folded,) = rule_table([limit]).folded
    assert "no baseline figure" not in folded.text and "not compared with the baseline" in folded.text
