"""/healthz, /metrics and the OpenAPI page."""

import time


def test_healthz_reports_the_database(make_client):
    body = make_client(embedded_executor=False).get("/healthz").json()
    assert body == {"status": "ok", "database": "ok", "executor": "NoExecutor"}


def test_metrics_has_job_state_gauges_and_verdict_counts(make_client, repo_dir):
    client = make_client()
    status_url = client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD"}).json()["status_url"]
    deadline = time.monotonic() + 20
    while client.get(status_url).json()["status"] != "done" and time.monotonic() < deadline:
        time.sleep(0.05)
    text = client.get("/metrics").text
    assert 'gate_jobs{state="done"} 1.0' in text
    assert 'gate_jobs{state="queued"} 0.0' in text
    assert 'gate_verdicts_total{verdict="accept"} 1.0' in text
    assert 'gate_stage_duration_seconds_bucket{le="5.0",stage="static"} 1.0' in text


def test_openapi_lists_the_routes_with_their_docstrings(make_client):
    spec = make_client(embedded_executor=False).get("/openapi.json").json()
    post = spec["paths"]["/api/v1/revisions"]["post"]
    assert post["description"].startswith("Submit a revision")
