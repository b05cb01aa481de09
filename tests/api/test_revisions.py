"""POST and GET /api/v1/revisions, artifacts, auth, validation."""

import time

from sqlalchemy import select

from gate.storage.db import make_engine, make_session_factory
from gate.storage.models import Job, Revision
from tests.patience import HANG_S


def _wait_done(client, status_url, timeout_s=HANG_S):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = client.get(status_url).json()
        if body["status"] == "done":
            return body
        time.sleep(0.05)
    raise AssertionError(f"not done: {body}")


def test_submit_is_stored_before_the_reply(make_client, database_url, repo_dir):
    client = make_client(embedded_executor=False)
    reply = client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD", "branch": "main"})
    assert reply.status_code == 202
    body = reply.json()
    assert body["status_url"].endswith(f"/api/v1/revisions/{body['id']}")
    engine = make_engine(database_url)   # another connection, as another process would see it
    with make_session_factory(engine)() as s:
        rev = s.get(Revision, body["id"])
        assert rev.branch == "main" and rev.sha == "b" * 40
        assert [j.state for j in s.scalars(select(Job).where(Job.revision_id == rev.id))] == ["queued"]
    engine.dispose()


def test_submit_runs_to_a_verdict_with_rules_stages_and_artifacts(make_client, repo_dir):
    client = make_client()
    status_url = client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD"}).json()["status_url"]
    body = _wait_done(client, status_url)
    (job,) = body["jobs"]
    assert body["verdict"] == "accept" and job["verdict"]["verdict"] == "accept"
    assert job["verdict"]["rules"][0]["rule"] == "max_registers"
    assert {(st["side"], st["stage"]) for st in job["stages"]} >= {("candidate", "static"), ("joint", "bench")}
    log = next(a for a in job["artifacts"] if a["kind"] == "build_log")
    download = client.get(log["url"])
    assert download.status_code == 200 and "Used 96 registers" in download.text


def test_unknown_field_is_refused_naming_it(make_client, repo_dir):
    reply = make_client().post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD", "colour": "red"})
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["loc"] == ["body", "colour"]


def test_option_like_sha_is_refused(make_client, repo_dir):
    reply = make_client().post("/api/v1/revisions", json={"repo": repo_dir, "sha": "--upload-pack=x"})
    assert reply.status_code == 422 and reply.json()["detail"][0]["loc"] == ["body", "sha"]


def test_unknown_sha_is_422_naming_it_and_the_revision_records_the_error(make_client, repo_dir):
    client = make_client()
    reply = client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "cafe1234"})
    assert reply.status_code == 422
    (problem,) = reply.json()["detail"]
    assert problem["loc"] == ["body", "sha"] and "cafe1234" in problem["msg"]
    body = client.get(reply.json()["status_url"]).json()
    assert body["status"] == "done" and body["verdict"] == "error" and "cafe1234" in body["error"]
    assert client.get("/healthz").json()["status"] == "ok"   # and the server keeps serving


def test_writes_need_the_bearer_token_when_one_is_set(make_client, repo_dir):
    client = make_client(token="s3cret", embedded_executor=False)
    payload = {"repo": repo_dir, "sha": "HEAD"}
    missing = client.post("/api/v1/revisions", json=payload)
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    wrong = client.post("/api/v1/revisions", json=payload, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    ok = client.post("/api/v1/revisions", json=payload, headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 202
    assert client.get(ok.json()["status_url"]).status_code == 200   # reads stay open


def test_unknown_revision_and_artifact_are_404(make_client):
    client = make_client(embedded_executor=False)
    assert client.get("/api/v1/revisions/999").status_code == 404
    assert client.get("/api/v1/artifacts/999").status_code == 404


def test_failing_job_ends_as_error_and_the_next_one_still_runs(make_client, pipeline, repo_dir):
    pipeline.raise_for = {"attn"}
    client = make_client()
    first = _wait_done(client, client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD"}).json()["status_url"])
    assert first["jobs"][0]["verdict"]["verdict"] == "error" and "boom" in first["jobs"][0]["error"]
    pipeline.raise_for = set()
    second = _wait_done(client, client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "a" * 40}).json()["status_url"])
    assert second["verdict"] == "accept"


def test_identical_submission_while_queued_is_200_with_the_same_revision(make_client, repo_dir):
    """Issue 12: every POST of one sha stored another revision. Failed before (202, a new id each
    time), passes now; `force` still stores a new one."""
    client = make_client(embedded_executor=False)
    payload = {"repo": repo_dir, "sha": "b" * 40, "kernels": ["attn"]}
    first = client.post("/api/v1/revisions", json=payload)
    again = client.post("/api/v1/revisions", json=payload)
    forced = client.post("/api/v1/revisions", json={**payload, "force": True})
    assert (first.status_code, first.json()["reused"]) == (202, False)
    assert (again.status_code, again.json()["reused"]) == (200, True)
    assert again.json()["id"] == first.json()["id"] and again.json()["status_url"] == first.json()["status_url"]
    assert (forced.status_code, forced.json()["reused"]) == (202, False)
    assert forced.json()["id"] != first.json()["id"]


def test_concurrent_identical_posts_store_one_revision(make_client, repo_dir, database_url):
    """Twelve identical POSTs at once: one 202, the rest 200 naming the same revision, no 5xx."""
    from concurrent.futures import ThreadPoolExecutor

    client = make_client(embedded_executor=False)
    payload = {"repo": repo_dir, "sha": "b" * 40}
    with ThreadPoolExecutor(12) as pool:
        replies = list(pool.map(lambda _: client.post("/api/v1/revisions", json=payload), range(12)))
    assert sorted(r.status_code for r in replies) == [200] * 11 + [202]
    assert len({r.json()["id"] for r in replies}) == 1
    engine = make_engine(database_url)
    with make_session_factory(engine)() as s:
        assert len(s.scalars(select(Revision)).all()) == 1
    engine.dispose()


def test_openapi_documents_idempotency_and_force(make_client):
    spec = make_client(embedded_executor=False).get("/openapi.json").json()
    post = spec["paths"]["/api/v1/revisions"]["post"]
    assert "Idempotent" in post["description"] and "200" in post["responses"]
    assert "force" in spec["components"]["schemas"]["RevisionIn"]["properties"]
    assert "reused" in spec["components"]["schemas"]["RevisionCreatedOut"]["properties"]


def _wait_state(client, status_url, state, timeout_s=HANG_S):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = client.get(status_url).json()
        if body["jobs"] and body["jobs"][0]["state"] == state:
            return body
        time.sleep(0.02)
    raise AssertionError(f"no job {state}: {body}")


def test_cancel_stops_a_running_revision_which_ends_cancelled_never_accept(make_client, repo_dir, pipeline):
    """Issue 12: there was no cancel. Failed before (404 for the route), passes now."""
    import threading

    pipeline.gate = threading.Event()                       # the job runs until cancelled
    client = make_client()
    status_url = client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD"}).json()["status_url"]
    _wait_state(client, status_url, "running")
    reply = client.post(status_url + "/cancel")
    assert reply.status_code == 200
    assert reply.json()["status"] == "cancelled" and len(reply.json()["cancelled_jobs"]) == 1
    body = client.get(status_url).json()
    assert body["status"] == "cancelled" and body["verdict"] != "accept"
    assert body["jobs"][0]["state"] == "cancelled" and body["jobs"][0]["verdict"] is None
    again = client.post(status_url + "/cancel")                     # idempotent
    assert again.status_code == 200 and again.json()["cancelled_jobs"] == []
    executor = client.app.state.gate.executor
    deadline = time.monotonic() + 5
    while executor._running and time.monotonic() < deadline:     # the held job was stopped at once
        time.sleep(0.02)
    assert not executor._running and not pipeline.gate.is_set() and len(pipeline.calls) == 1
    assert client.get(status_url).json()["jobs"][0]["verdict"] is None


def test_cancel_of_a_queued_revision_means_its_jobs_never_start(make_client, repo_dir, pipeline):
    client = make_client(embedded_executor=False)
    status_url = client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD"}).json()["status_url"]
    assert client.post(status_url + "/cancel").status_code == 200
    assert client.get(status_url).json()["jobs"][0]["state"] == "cancelled"


def test_cancel_answers_404_for_an_unknown_id_and_409_once_done(make_client, repo_dir):
    client = make_client()
    assert client.post("/api/v1/revisions/987654/cancel").status_code == 404
    status_url = client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD"}).json()["status_url"]
    _wait_done(client, status_url)
    late = client.post(status_url + "/cancel")
    assert late.status_code == 409 and "done" in late.json()["detail"]
    assert client.get(status_url).json()["verdict"] == "accept"              # untouched


def test_cancel_needs_the_token_when_one_is_set(make_client, repo_dir):
    client = make_client(token="s3cret", embedded_executor=False)
    auth = {"Authorization": "Bearer s3cret"}
    status_url = client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD"}, headers=auth).json()["status_url"]
    assert client.post(status_url + "/cancel").status_code == 401
    assert client.post(status_url + "/cancel", headers=auth).status_code == 200
