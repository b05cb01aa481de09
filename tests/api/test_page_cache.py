"""The pages' LRU: hits skip the build, misses build once, the oldest entry leaves first."""

from __future__ import annotations

import pytest

from gate.api.page_cache import PageCache


def test_get_or_build_builds_once_per_key():
    cache: PageCache[str] = PageCache()
    calls = []
    build = lambda: calls.append(1) or "page"   # noqa: E731
    assert cache.get_or_build(("k", 1), build) == "page"
    assert cache.get_or_build(("k", 1), build) == "page"
    assert len(calls) == 1


def test_a_new_data_version_is_a_new_entry():
    cache: PageCache[int] = PageCache()
    assert cache.get_or_build(("k", 1), lambda: 1) == 1
    assert cache.get_or_build(("k", 2), lambda: 2) == 2


def test_least_recently_used_entry_is_evicted_first():
    cache: PageCache[str] = PageCache(max_entries=2)
    cache.get_or_build("a", lambda: "a")
    cache.get_or_build("b", lambda: "b")
    cache.get_or_build("a", lambda: "stale")      # touches a: b is now the oldest
    cache.get_or_build("c", lambda: "c")
    assert len(cache) == 2
    assert cache.get_or_build("a", lambda: "rebuilt") == "a"
    assert cache.get_or_build("b", lambda: "rebuilt") == "rebuilt"


def test_a_failed_build_keeps_nothing():
    cache: PageCache[str] = PageCache()

    def fail() -> str:
        raise LookupError("no such kernel")

    with pytest.raises(LookupError):
        cache.get_or_build("k", fail)
    assert len(cache) == 0


def test_the_overview_shows_a_verdict_stored_after_it_was_cached(make_client, session_factory):
    """The overview's kernel cards are kept per verdicts version: a new verdict is on the next view."""
    from gate.domain import routes
    from gate.sample import seed_judged_history
    from gate.storage.unit import UnitOfWork

    with session_factory() as session:
        seed_judged_history(UnitOfWork(session), revisions=3, kernels=["gemm_tiled"], a100=False,
                            stages=False, queue=False)
    client = make_client(embedded_executor=False)
    assert "3 revisions" in client.get(routes.HOME).text
    client.get(routes.HOME)      # served from the cache
    with session_factory() as session:
        UnitOfWork(session).samples.append_judged_revision("gemm_tiled", verdict="reject",
                                                            reason="an appended reject")
        session.commit()
    page = client.get(routes.HOME).text
    assert "4 revisions" in page and "an appended reject" in page
