"""The kernel history page: served from the page cache until a new verdict is stored."""

from __future__ import annotations


from gate.sample import seed_judged_history
from gate.storage.samples import Samples
from gate.storage.unit import UnitOfWork

KERNEL = "flashcore_wmma"
SHAPE = "b1_h8_s512_d64"


def _seed(session_factory, revisions: int) -> None:  # noqa: ANN001
    with session_factory() as session:
        seed_judged_history(UnitOfWork(session), revisions=revisions, kernels=[KERNEL], a100=False, stages=False,
                            queue=False)


def _add_verdict(session_factory, verdict: str, latency_us: float | None = None) -> None:  # noqa: ANN001
    """One more revision of the kernel, judged on the GPU kind of its last one (with a latency)."""
    metrics = [] if latency_us is None else [{"shape": SHAPE, "name": "latency_median_us",
                                              "series": "candidate", "value": latency_us, "unit": "us"}]
    with session_factory() as session:
        Samples(session).append_judged_revision(KERNEL, verdict=verdict, reason="r", metrics=metrics,
                                                sha="f" * 40, message="One more commit")
        session.commit()


def test_kernel_page_shows_a_verdict_stored_after_it_was_cached(make_client, session_factory):  # noqa: ANN001
    _seed(session_factory, 12)
    client = make_client(embedded_executor=False)
    assert "12 revisions on" in client.get(f"/kernels/{KERNEL}").text
    assert "12 revisions on" in client.get(f"/kernels/{KERNEL}").text   # a cache hit
    _add_verdict(session_factory, "reject")
    assert "13 revisions on" in client.get(f"/kernels/{KERNEL}").text


def test_kernel_page_charts_a_verdict_stored_after_its_history_was_held(make_client, session_factory):  # noqa: ANN001
    _seed(session_factory, 12)
    client = make_client(embedded_executor=False)
    assert "ffffffff" not in client.get(f"/kernels/{KERNEL}", params={"shape": SHAPE}).text
    _add_verdict(session_factory, "reject", latency_us=12345.0)
    page = client.get(f"/kernels/{KERNEL}", params={"shape": SHAPE}).text
    assert '"ffffffff"' in page        # the new revision's sha, in the hover table
    assert "12345" in page             # its latency, a point of the chart
    assert client.app.state.series_cache.full_reads == 1   # read incrementally


def test_kernel_page_caches_each_filter_apart(make_client, session_factory):  # noqa: ANN001
    _seed(session_factory, 12)
    client = make_client(embedded_executor=False)
    every = client.get(f"/kernels/{KERNEL}").text
    one = client.get(f"/kernels/{KERNEL}", params={"shape": "b1_h8_s512_d64"}).text
    assert 'id="chart-latency-b4_h16_s4096_d64_causal"' in every
    assert 'id="chart-latency-b4_h16_s4096_d64_causal"' not in one


def test_unknown_kernel_is_404_and_not_cached(make_client, session_factory):  # noqa: ANN001
    _seed(session_factory, 12)
    client = make_client(embedded_executor=False)
    assert client.get("/kernels/nope").status_code == 404
    assert client.get("/kernels/nope").status_code == 404
    assert len(client.app.state.page_cache) == 0


def test_histories_are_read_at_start_and_the_first_view_reads_nothing_again(make_client,  # noqa: ANN001
                                                                             session_factory):
    _seed(session_factory, 12)
    client = make_client(embedded_executor=False)
    warmup = client.app.state.series_warmup
    assert warmup.done.wait(10)
    store = client.app.state.series_cache
    assert warmup.warmed and store.full_reads == len(warmup.warmed)
    assert "12 revisions on" in client.get(f"/kernels/{KERNEL}").text
    assert store.full_reads == len(warmup.warmed)        # served from the held history


def test_a_view_racing_the_warm_up_shows_the_whole_history(make_client, session_factory):  # noqa: ANN001
    _seed(session_factory, 12)
    client = make_client(embedded_executor=False)
    page = client.get(f"/kernels/{KERNEL}").text          # whether warm-up has finished or not
    client.app.state.series_warmup.done.wait(10)
    assert "12 revisions on" in page
    assert page == client.get(f"/kernels/{KERNEL}").text  # same data version: one page
    _add_verdict(session_factory, "reject", latency_us=12345.0)
    assert "12345" in client.get(f"/kernels/{KERNEL}", params={"shape": SHAPE}).text


HISTORY_API = f"/api/v1/kernels/{KERNEL}/history"


def test_history_api_answers_a_verdict_stored_after_its_answer_was_kept(make_client, session_factory):  # noqa: ANN001
    _seed(session_factory, 12)
    client = make_client(embedded_executor=False)
    params = {"metric": "latency_median_us", "shape": SHAPE}
    first = client.get(HISTORY_API, params=params)
    assert first.headers["content-type"] == "application/json"
    assert client.get(HISTORY_API, params=params).content == first.content     # kept
    _add_verdict(session_factory, "reject", latency_us=12345.0)
    after = client.get(HISTORY_API, params=params).json()
    assert after["revisions"] == first.json()["revisions"] + 1
    assert after["series"][0]["points"][-1]["value"] == 12345.0
    assert after["series"][0]["points"][-1]["verdict"] == "reject"


def test_history_api_keeps_each_question_apart_and_no_404(make_client, session_factory):  # noqa: ANN001
    _seed(session_factory, 12)
    client = make_client(embedded_executor=False)
    one = client.get(HISTORY_API, params={"metric": "latency_median_us", "shape": SHAPE}).json()
    every = client.get(HISTORY_API, params={"metric": "latency_median_us"}).json()
    assert [s["shape"] for s in one["series"]] == [SHAPE]
    assert len(every["series"]) > 1
    kept = len(client.app.state.page_cache)
    assert client.get("/api/v1/kernels/nope/history", params={"metric": "latency_median_us"}).status_code == 404
    assert client.get(HISTORY_API, params={"metric": "latency_median_us", "gpu": "no GPU"}).status_code == 404
    assert len(client.app.state.page_cache) == kept
