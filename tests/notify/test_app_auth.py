import time

import httpx
import jwt
import pytest

from gate.notify.app_auth import AppAuth, load_private_key
from gate.notify.listeners import CheckRunListener
from gate.notify.retry import RetryPolicy
from gate.notify.sender import Sender
from gate.services.outbox import sweep
from gate.storage.models import Notification
from tests.fakes.github_server import FakeGitHub
from tests.notify.conftest import PUBLIC_URL, SHA, add_job, finish, store_queued, store_verdict
from tests.notify.sample_reports import REPORTS

FAST = RetryPolicy(attempts=3, backoff_s=0.01)


@pytest.fixture
def app_github(app_key):
    with FakeGitHub(token="no-personal-token", app_id="1234", app_public_key_pem=app_key[1]) as fake:
        yield fake


@pytest.fixture
def client():
    with httpx.Client() as c:
        yield c


def test_app_jwt_is_rs256_signed_with_iss_and_a_short_lifetime(app_key, client):
    token = AppAuth("1234", app_key[0], "http://unused", client).app_jwt()
    claims = jwt.decode(token, app_key[1], algorithms=["RS256"])
    assert claims["iss"] == "1234"
    assert claims["iat"] <= time.time() - 59 and claims["exp"] - claims["iat"] <= 600


def test_installation_token_is_cached_until_shortly_before_expiry(app_key, app_github, client):
    app_github.token_lifetime_s = 150                     # GitHub's are 3600 s; the margin is 120 s
    now = [time.time()]
    auth = AppAuth("1234", app_key[0], app_github.url, client, clock=lambda: now[0])
    first = auth.token_for("octo/flashcore")
    assert auth.token_for("octo/flashcore") == first
    assert len(app_github.accepted("POST", "/access_tokens$")) == 1
    now[0] += 50                                          # 100 s left: inside the refresh margin
    assert auth.token_for("octo/flashcore") != first
    assert len(app_github.accepted("GET", "/installation$")) == 1     # the id stays cached
    assert app_github.problems == []


def test_private_key_may_be_a_path_to_a_pem_file(app_key, tmp_path):
    path = tmp_path / "app.pem"
    path.write_text(app_key[0])
    assert load_private_key(str(path)) == app_key[0]


def test_github_app_creates_then_completes_a_check_run_with_the_rule_table(
        app_key, app_github, client, store, session_factory):
    listener = CheckRunListener(app_github.url, PUBLIC_URL)
    sender = Sender(client=client, app_auth=AppAuth("1234", app_key[0], app_github.url, client), policy=FAST)
    with session_factory() as session:
        job = add_job(session)
        store_queued(session, listener, [job])
        session.commit()
    assert sweep(sender, store).sent == 1
    with session_factory() as session:
        job = session.merge(job)
        finish(session, job, REPORTS["reject_bank_conflicts"])
        store_verdict(session, listener, job)
        session.commit()
    assert sweep(sender, store).sent == 1

    (create,) = app_github.accepted("POST", "^/repos/octo/flashcore/check-runs$")
    (complete,) = app_github.accepted("PATCH", r"^/repos/octo/flashcore/check-runs/1$")
    assert create.body["head_sha"] == SHA and create.body["status"] == "queued"
    assert create.body["name"] == "gate/flashcore_wmma"
    assert complete.body["conclusion"] == "failure"
    assert "| `max_bank_conflict_pct` | b4_h16_s4096_d64_causal | 12.5% | 5% |" in complete.body["output"]["summary"]
    assert complete.headers["authorization"] == f"Bearer {app_github.issued_tokens[0]}"
    assert app_github.check_runs[1]["conclusion"] == "failure"
    assert app_github.problems == []


def test_completion_creates_a_completed_run_when_the_create_failed_for_good(
        app_key, app_github, client, store, session_factory):
    listener = CheckRunListener(app_github.url, PUBLIC_URL)
    with session_factory() as session:
        job = add_job(session)
        store_queued(session, listener, [job])
        session.flush()
        session.query(Notification).update({"state": "failed"})
        finish(session, job, REPORTS["accept"])
        store_verdict(session, listener, job)
        session.commit()
    sender = Sender(client=client, app_auth=AppAuth("1234", app_key[0], app_github.url, client), policy=FAST)
    assert sweep(sender, store).sent == 1
    (created,) = app_github.accepted("POST", "/check-runs$")
    assert created.body["status"] == "completed" and created.body["conclusion"] == "success"
    assert app_github.problems == []


def test_completion_waits_while_the_create_is_still_pending(store, app_key, app_github, client, session_factory):
    app_github.fail("POST", "/check-runs$", status=500, times=1)
    listener = CheckRunListener(app_github.url, PUBLIC_URL)
    with session_factory() as session:
        job = add_job(session)
        store_queued(session, listener, [job])
        finish(session, job, REPORTS["accept"])
        store_verdict(session, listener, job)
        session.commit()
    sender = Sender(client=client, app_auth=AppAuth("1234", app_key[0], app_github.url, client),
                    policy=RetryPolicy(attempts=1), backoff_base_s=0)
    assert sweep(sender, store).deferred == 2
    assert sweep(sender, store).sent == 2
    taken = [r.method for r in app_github.requests if "check-runs" in r.path and r.answered < 300]
    assert taken == ["POST", "PATCH"]
