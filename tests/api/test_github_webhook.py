"""The webhook through the real app (uvicorn on loopback, local executor, a fake pipeline) and a
GitHub stand-in: signed events in, jobs run, statuses and Check Runs out."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import func, select

from gate.config import Settings
from gate.domain.verdict import Verdict
from gate.notify import messages
from gate.storage.db import make_engine, make_session_factory
from gate.storage.models import Job, Repository, Revision, WebhookDelivery
from gate.storage.queries import stored_report
from tests.api.github_app_server import SECRET, make_pr_repo, post_event, pull_request_payload, serve, signed
from tests.fakes.github_server import FakeGitHub, make_app_key
from tests.service_fakes import FakePipeline, FakeSources

PUBLIC_URL = "http://gate.test"


@pytest.fixture
def repo(tmp_path):
    return make_pr_repo(tmp_path / "flashcore")


@pytest.fixture
def github():
    with FakeGitHub(token="test-token") as fake:
        yield fake


@pytest.fixture(scope="module")
def app_key():
    return make_app_key()


@pytest.fixture
def db(database_url):
    engine = make_engine(database_url)
    yield make_session_factory(engine)
    engine.dispose()


def _settings(database_url: str, tmp_path, github: FakeGitHub, **extra: object) -> Settings:
    base = dict(database_url=database_url, data_dir=tmp_path / "data", github_webhook_secret=SECRET,
                github_token="test-token", github_api_url=github.url, public_url=PUBLIC_URL)
    return Settings(**{**base, **extra})


def _sources(repo) -> FakeSources:
    shas = {repo.first: repo.first, repo.main_tip: repo.main_tip, repo.head: repo.head}
    return FakeSources(kernels=("attn",), refs=shas)


def _job_count(db) -> int:
    with db() as session:
        return session.scalar(select(func.count()).select_from(Job))


def _statuses(github: FakeGitHub, sha: str) -> list[dict]:
    return [r.body for r in github.accepted("POST", f"^/repos/octo/flashcore/statuses/{sha}$")]


def test_signed_pull_request_runs_the_job_and_posts_pending_then_the_final_status(
        database_url, tmp_path, repo, github, db):
    held = threading.Event()              # the job cannot end before the test lets it
    pipeline = FakePipeline(verdict=Verdict.REJECT, gate=held)
    with serve(_settings(database_url, tmp_path, github), gate_job=pipeline, sources=_sources(repo)) as url:
        reply = post_event(url, "pull_request", pull_request_payload(repo))
        # Answered while its job was still held: the webhook does not wait for the gate.
        assert not held.is_set() and _statuses(github, repo.head)[1:] == []
        assert reply.status_code == 202 and reply.json()["status"] == "queued"
        held.set()
        github.wait_for(lambda: len(_statuses(github, repo.head)) == 2)

    pending, final = _statuses(github, repo.head)
    revision_id = reply.json()["revision_id"]
    with db() as session:
        (job,) = session.scalars(select(Job)).all()
        expected = messages.describe(stored_report(job))
        revision = session.get(Revision, revision_id)
        assert revision.repository.name == "octo/flashcore" and revision.pull_request == 7
    assert pending["state"] == "pending" and pending["context"] == "gate/attn"
    assert final == {"state": "failure", "context": "gate/attn", "description": expected,
                     "target_url": f"{PUBLIC_URL}/revisions/{revision_id}"}
    assert pipeline.calls == [{"repo": repo.clone_url, "sha": repo.head, "base_sha": repo.first, "kernel": "attn"}]
    assert github.problems == []


@pytest.mark.parametrize("signature", [None, "sha256=" + "0" * 64, signed(b"another body")],
                         ids=["missing", "zeros", "other-body"])
def test_wrong_or_missing_signature_gets_401_and_creates_no_job(database_url, tmp_path, repo, github, db, signature):
    with serve(_settings(database_url, tmp_path, github), gate_job=FakePipeline(), sources=_sources(repo)) as url:
        reply = post_event(url, "pull_request", pull_request_payload(repo), signature=signature)
    assert reply.status_code == 401
    assert "X-Hub-Signature-256" in reply.json()["detail"]
    with db() as session:
        assert session.scalar(select(func.count()).select_from(Revision)) == 0
    assert _job_count(db) == 0 and github.requests == []


def test_unset_secret_refuses_every_webhook_with_503(database_url, tmp_path, repo, github, db):
    settings = _settings(database_url, tmp_path, github, github_webhook_secret=None)
    with serve(settings, gate_job=FakePipeline(), sources=_sources(repo)) as url:
        reply = post_event(url, "pull_request", pull_request_payload(repo))
    assert reply.status_code == 503 and "GATE_GITHUB_WEBHOOK_SECRET" in reply.json()["detail"]
    assert _job_count(db) == 0


def test_same_delivery_id_twice_gives_one_job(database_url, tmp_path, repo, github, db):
    pipeline = FakePipeline()
    with serve(_settings(database_url, tmp_path, github), gate_job=pipeline, sources=_sources(repo)) as url:
        first = post_event(url, "pull_request", pull_request_payload(repo), delivery="same")
        github.wait_for(lambda: len(_statuses(github, repo.head)) == 2)
        again = post_event(url, "pull_request", pull_request_payload(repo), delivery="same")
        time.sleep(0.5)
    assert first.status_code == 202
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    assert again.json()["revision_id"] == first.json()["revision_id"]
    assert _job_count(db) == 1 and len(pipeline.calls) == 1
    with db() as session:
        assert session.scalar(select(func.count()).select_from(WebhookDelivery)) == 1


def test_a_delivery_replayed_with_a_new_id_while_queued_or_running_gives_no_second_job(
        database_url, tmp_path, repo, github, db):
    """Issue 12: a signed delivery replayed with a new delivery id created a job each time.
    Failed before (two revisions), passes now: the identical submission is reused."""
    pipeline = FakePipeline(gate=threading.Event())                         # holds the job running
    with serve(_settings(database_url, tmp_path, github), gate_job=pipeline, sources=_sources(repo)) as url:
        first = post_event(url, "pull_request", pull_request_payload(repo), delivery="r-1")
        replay = post_event(url, "pull_request", pull_request_payload(repo), delivery="r-2")
        pipeline.gate.set()
        github.wait_for(lambda: len(_statuses(github, repo.head)) == 2)
    assert replay.json()["revision_id"] == first.json()["revision_id"]
    with db() as session:
        assert session.scalar(select(func.count()).select_from(Revision)) == 1
    assert _job_count(db) == 1 and len(pipeline.calls) == 1


def test_github_answering_502_twice_gets_the_final_status_exactly_once(database_url, tmp_path, repo, github):
    pipeline = FakePipeline(gate=threading.Event())                         # holds the job ...
    with serve(_settings(database_url, tmp_path, github), gate_job=pipeline, sources=_sources(repo)) as url:
        post_event(url, "pull_request", pull_request_payload(repo))
        github.wait_for(lambda: len(_statuses(github, repo.head)) == 1)       # pending went out
        github.fail("POST", "/statuses/", status=502, times=2)
        pipeline.gate.set()                                                   # ... until GitHub fails
        github.wait_for(lambda: len(_statuses(github, repo.head)) == 2)
        time.sleep(1.0)                                                       # nothing more arrives
    finals = [s for s in _statuses(github, repo.head) if s["state"] != "pending"]
    assert [s["state"] for s in finals] == ["success"]
    answers = [r.answered for r in github.requests if "/statuses/" in r.path]
    assert answers == [201, 502, 502, 201]


def test_github_app_produces_a_check_run_created_then_completed(database_url, tmp_path, repo, app_key):
    private_pem, public_pem = app_key
    with FakeGitHub(token="unused", app_id="99", app_public_key_pem=public_pem) as github:
        settings = _settings(database_url, tmp_path, github, github_token=None, github_app_id="99",
                             github_app_private_key=private_pem)
        with serve(settings, gate_job=FakePipeline(verdict=Verdict.INCOMPLETE), sources=_sources(repo)) as url:
            post_event(url, "pull_request", pull_request_payload(repo))
            github.wait_for(lambda: github.accepted("PATCH", "/check-runs/1$"))
        (create,) = github.accepted("POST", "^/repos/octo/flashcore/check-runs$")
        (complete,) = github.accepted("PATCH", "^/repos/octo/flashcore/check-runs/1$")
        assert create.body["name"] == "gate/attn" and create.body["head_sha"] == repo.head
        assert complete.body["conclusion"] == "action_required"          # incomplete never passes
        summary = complete.body["output"]["summary"]
        assert summary.startswith("### gate/attn: incomplete")
        assert "| `max_registers` |" in summary and f"]({PUBLIC_URL}/revisions/" in summary
        assert github.problems == []


def test_push_to_the_default_branch_is_queued_with_the_repository_named_by_full_name(
        database_url, tmp_path, repo, github, db):
    payload = {"ref": "refs/heads/main", "after": repo.main_tip,
               "repository": {"full_name": "octo/flashcore", "clone_url": repo.clone_url, "default_branch": "main"}}
    with serve(_settings(database_url, tmp_path, github), gate_job=FakePipeline(), sources=_sources(repo)) as url:
        reply = post_event(url, "push", payload)
        github.wait_for(lambda: len(_statuses(github, repo.main_tip)) == 2)
    assert reply.status_code == 202
    with db() as session:
        assert session.scalars(select(Repository.name)).all() == ["octo/flashcore"]


@pytest.mark.parametrize(("event", "body", "status", "words"), [
    ("pull_request", b"{not json", 400, "not JSON"),
    ("issues", b"{}", 400, "not handled"),
    ("pull_request", b'{"action": "opened"}', 422, "pull_request"),
    ("push", b'{"ref": "refs/heads/main", "after": "nope", "repository": {}}', 422, "after"),
])
def test_malformed_or_unknown_events_get_a_clear_4xx(database_url, tmp_path, repo, github, db,
                                                      event, body, status, words):
    with serve(_settings(database_url, tmp_path, github), gate_job=FakePipeline(), sources=_sources(repo)) as url:
        reply = post_event(url, event, body)
    assert reply.status_code == status and words in reply.json()["detail"]
    assert _job_count(db) == 0


@pytest.mark.parametrize(("event", "payload_of", "words"), [
    ("ping", lambda repo: {"zen": "Keep it logically awesome."}, "webhook reached"),
    ("pull_request", lambda repo: pull_request_payload(repo, action="closed"), "closed"),
    ("push", lambda repo: {"ref": "refs/heads/feature", "after": repo.head, "repository": {
        "full_name": "octo/flashcore", "clone_url": repo.clone_url, "default_branch": "main"}}, "not gated"),
])
def test_events_that_ask_for_nothing_get_200_and_no_job(database_url, tmp_path, repo, github, db,
                                                        event, payload_of, words):
    with serve(_settings(database_url, tmp_path, github), gate_job=FakePipeline(), sources=_sources(repo)) as url:
        reply = post_event(url, event, payload_of(repo))
    assert reply.status_code == 200 and words in reply.json()["detail"]
    assert _job_count(db) == 0


def _fork(payload: dict, action: str = "opened", label: str | None = None) -> dict:
    payload = {**payload, "action": action}
    payload["pull_request"]["head"]["repo"] = {"full_name": "mallory/flashcore"}
    if label:
        payload["label"] = {"name": label}
    return payload


def test_a_fork_pull_request_waits_for_a_maintainers_label_and_says_so(database_url, tmp_path, repo, github, db):
    """Issue 12, item 7: code from forks is not built until a maintainer approves."""
    pipeline = FakePipeline()
    with serve(_settings(database_url, tmp_path, github), gate_job=pipeline, sources=_sources(repo)) as url:
        waiting = post_event(url, "pull_request", _fork(pull_request_payload(repo)), delivery="d-1")
        assert waiting.status_code == 200 and waiting.json()["status"] == "awaiting_approval"
        github.wait_for(lambda: len(_statuses(github, repo.head)) == 1)
        (pending,) = _statuses(github, repo.head)
        assert pending["state"] == "pending" and pending["context"] == "gate"
        assert "gate:approved" in pending["description"] and "/gate run" in pending["description"]
        assert _job_count(db) == 0 and pipeline.calls == []
        other_label = post_event(url, "pull_request", _fork(pull_request_payload(repo), "labeled", "bug"),
                                 delivery="d-2")
        assert other_label.json()["status"] == "ignored" and _job_count(db) == 0
        approved = post_event(url, "pull_request", _fork(pull_request_payload(repo), "labeled", "gate:approved"),
                              delivery="d-3")
        assert approved.status_code == 202 and approved.json()["status"] == "queued"
        github.wait_for(lambda: len(pipeline.calls) == 1)
        pushed_again = post_event(url, "pull_request", _fork(pull_request_payload(repo), "synchronize"),
                                  delivery="d-4")
        assert pushed_again.json()["status"] == "awaiting_approval"      # a new push needs a new approval
    assert pipeline.calls[0]["sha"] == repo.head


def test_a_maintainers_comment_approves_a_fork_pull_request(database_url, tmp_path, repo, github, db):
    github.pulls["octo/flashcore#7"] = {"head": {"sha": repo.head, "ref": "feature"},
                                       "base": {"sha": repo.main_tip, "ref": "main"}}
    comment = {"action": "created", "issue": {"number": 7, "pull_request": {"url": "x"}},
               "repository": pull_request_payload(repo)["repository"]}
    pipeline = FakePipeline()
    with serve(_settings(database_url, tmp_path, github), gate_job=pipeline, sources=_sources(repo)) as url:
        outsider = post_event(url, "issue_comment", {**comment, "comment": {
            "body": "/gate run", "author_association": "CONTRIBUTOR"}}, delivery="c-1")
        assert outsider.json()["status"] == "ignored" and _job_count(db) == 0
        maintainer = post_event(url, "issue_comment", {**comment, "comment": {
            "body": "/gate run", "author_association": "MEMBER"}}, delivery="c-2")
        assert maintainer.status_code == 202, maintainer.text
        github.wait_for(lambda: len(pipeline.calls) == 1)
    assert pipeline.calls[0]["sha"] == repo.head and pipeline.calls[0]["base_sha"] == repo.first
