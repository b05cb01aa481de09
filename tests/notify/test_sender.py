from datetime import timedelta

import httpx
import pytest

from gate.notify import github_status
from gate.notify.retry import RetryPolicy
from gate.notify.sender import Sender
from gate.services.outbox import claim_and_deliver, sweep
from gate.storage import outbox
from gate.storage.models import Notification, utcnow
from tests.notify.conftest import SHA

FAST = RetryPolicy(attempts=3, backoff_s=0.01, max_in_call_wait_s=2.0, timeout_s=5.0)
STATUS_PATH = f"^/repos/octo/flashcore/statuses/{SHA}$"


def _store_status(session_factory, api_url: str, state: str, context: str = "gate/k") -> int:
    body = github_status.status_body(state, f"{state} text", context, "https://gate.example.com/revisions/1")
    with session_factory() as session:
        (row,) = outbox.add(session, [github_status.new_status(api_url, "octo/flashcore", SHA, body, None)])
        session.commit()
        return row.id


def _row(session_factory, row_id: int) -> Notification:
    with session_factory() as session:
        return session.get(Notification, row_id)


@pytest.fixture
def client():
    with httpx.Client() as c:
        yield c


def test_status_reaches_github_with_documented_headers_and_body(store, session_factory, github, client):
    row_id = _store_status(session_factory, github.url, "success")
    assert sweep(Sender(client=client, github_token="test-token", policy=FAST), store).sent == 1
    (request,) = github.accepted("POST", STATUS_PATH)
    assert request.headers["authorization"] == "Bearer test-token"
    assert request.body["state"] == "success" and request.body["context"] == "gate/k"
    assert github.problems == []
    assert _row(session_factory, row_id).state == "sent"


def test_two_502s_then_success_delivers_the_status_exactly_once(store, session_factory, github, client):
    github.fail("POST", "/statuses/", status=502, times=2)
    row_id = _store_status(session_factory, github.url, "failure")
    sender = Sender(client=client, github_token="test-token", policy=FAST)
    assert sweep(sender, store).sent == 1
    assert sweep(sender, store).sent == 0          # a sent row is never sent again
    assert [r.answered for r in github.requests] == [502, 502, 201]
    assert len(github.accepted("POST", STATUS_PATH)) == 1
    assert _row(session_factory, row_id).attempts == 1


def test_secondary_rate_limit_waits_retry_after_then_succeeds(store, session_factory, github, client):
    github.rate_limit("POST", "/statuses/", retry_after_s=1)
    _store_status(session_factory, github.url, "success")
    sweep(Sender(client=client, github_token="test-token", policy=FAST), store)
    assert [r.answered for r in github.requests] == [403, 201]


def test_long_retry_after_defers_the_row_to_a_later_sweep(store, session_factory, github, client):
    github.rate_limit("POST", "/statuses/", retry_after_s=120)
    row_id = _store_status(session_factory, github.url, "success")
    before = utcnow()
    result = sweep(Sender(client=client, github_token="test-token", policy=FAST), store)
    assert result.deferred == 1 and len(github.requests) == 1     # not slept in the call
    row = _row(session_factory, row_id)
    assert row.state == "pending" and row.next_attempt_at >= before + timedelta(seconds=119)


def test_unreachable_github_leaves_the_row_pending_and_a_later_sweep_sends_it(store, session_factory, github, client):
    dead_url = f"http://127.0.0.1:{_free_port()}"
    row_id = _store_status(session_factory, dead_url, "success")
    now = [utcnow()]
    sender = Sender(client=client, github_token="test-token", policy=FAST, clock=lambda: now[0])
    assert sweep(sender, store).deferred == 1
    row = _row(session_factory, row_id)
    assert row.state == "pending" and row.attempts == 1 and "ConnectError" in row.last_error
    assert sweep(sender, store).deferred == 0              # not due yet: backoff
    with session_factory() as session:                              # GitHub is back
        session.get(Notification, row_id).url = row.url.replace(dead_url, github.url)
        session.commit()
    now[0] += timedelta(seconds=31)
    assert sweep(sender, store).sent == 1
    assert len(github.accepted("POST", STATUS_PATH)) == 1


def test_validation_error_is_failed_for_good_not_retried(store, session_factory, github, client):
    row_id = _store_status(session_factory, github.url, "success")
    with session_factory() as session:
        row = session.get(Notification, row_id)
        row.payload = {**row.payload, "body": {**row.payload["body"], "state": "neutral"}}
        session.commit()
    assert sweep(Sender(client=client, github_token="test-token", policy=FAST), store).failed == 1
    assert len(github.requests) == 1 and "state 'neutral'" in github.problems[0]


def test_row_out_of_attempts_is_marked_failed(store, session_factory, github, client):
    github.fail("POST", "/statuses/", status=500, times=100)
    row_id = _store_status(session_factory, github.url, "success")
    sender = Sender(client=client, github_token="test-token", policy=RetryPolicy(attempts=1),
                    max_attempts=2, backoff_base_s=0)
    sweep(sender, store)
    sweep(sender, store)
    assert _row(session_factory, row_id).state == "failed"


def test_late_pending_is_superseded_by_the_final_state_already_sent(store, session_factory, github, client):
    github.fail("POST", "/statuses/", status=500, times=1)
    pending_id = _store_status(session_factory, github.url, "pending")
    final_id = _store_status(session_factory, github.url, "success")
    sender = Sender(client=client, github_token="test-token", policy=RetryPolicy(attempts=1), backoff_base_s=0)
    sweep(sender, store)                    # pending: 500, deferred; success: sent
    sweep(sender, store)                    # pending must not overwrite success
    assert _row(session_factory, final_id).state == "sent"
    assert _row(session_factory, pending_id).state == "superseded"
    assert [r.body["state"] for r in github.accepted("POST", STATUS_PATH)] == ["success"]


def test_pending_and_final_go_out_oldest_first(store, session_factory, github, client):
    _store_status(session_factory, github.url, "pending")
    _store_status(session_factory, github.url, "failure")
    sweep(Sender(client=client, github_token="test-token", policy=FAST), store)
    assert [r.body["state"] for r in github.accepted("POST", STATUS_PATH)] == ["pending", "failure"]


def test_a_row_claimed_by_one_sweeper_is_skipped_by_another(store, session_factory, github, client):
    row_id = _store_status(session_factory, github.url, "success")
    first = Sender(client=client, github_token="test-token", policy=FAST)
    second = Sender(client=client, github_token="test-token", policy=FAST)
    now = utcnow()
    with store.unit() as one, store.unit() as two:
        assert claim_and_deliver(first, one, row_id, now) == "sent"
        assert claim_and_deliver(second, two, row_id, now) is None
    assert len(github.accepted("POST", STATUS_PATH)) == 1


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
