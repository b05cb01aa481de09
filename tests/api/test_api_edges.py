"""The API's edges on SQLite and PostgreSQL (issue 12, "database edges"): input the columns cannot
hold is refused with a 422 (a 400 for a header) naming it, ids beyond 32 bits are 404s, 422s do not
echo large input, and every time the API states carries its UTC offset.

Each test failed before its fix: PostgreSQL answered 500 (value too long, integer out of range,
NUL in a string) where SQLite stored the over-long value or answered 500 (an int beyond 64 bits);
a 422 echoed the whole input; times came out naive."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from fastapi.testclient import TestClient
from service_fakes import FakePipeline, FakeSources
from test_revisions import _wait_done

from gate.api.app import create_app
from gate.api.validation_errors import MAX_ERRORS
from gate.config import Settings
from gate.storage.limits import max_length
from gate.storage.models import Repository, Revision, WebhookDelivery
from tests.api.github_app_server import SECRET, signed

OUT_OF_RANGE_IDS = [2**31, 2**63, 2**64 + 1, 10**30, -1, -(2**31) - 1]


def _ok(reply, *codes: int) -> None:   # noqa: ANN001
    assert reply.status_code in codes, (reply.status_code, reply.text[:300])


# --- strings longer than their columns --------------------------------------------------------------

@pytest.mark.parametrize(("field", "value"), [
    ("sha", "a" * (max_length(Revision.sha) + 1)),
    ("base_sha", "b" * (max_length(Revision.base_sha) + 1)),
    ("branch", "c" * (max_length(Revision.branch) + 1)),
    ("repo", "/srv/" + "r" * (max_length(Repository.name) + 1)),
    ("repo", "https://github.com/octo/" + "r" * (max_length(Repository.name) + 1)),
    ("repo", "~no-such-user-here/flash"),
])
def test_input_longer_than_its_column_is_a_422_naming_the_field(make_client, field, value):
    """The API allowed 200-character shas and any repository name: PostgreSQL answered 500
    (`value too long for type character varying(64)`); `~unknown-user/...` raised in the server."""
    body = {"repo": "/srv/flash", "sha": "HEAD", field: value}
    reply = make_client().post("/api/v1/revisions", json=body)
    _ok(reply, 422)
    assert reply.json()["detail"][0]["loc"] == ["body", field]


def test_the_api_limits_are_the_columns(make_client):
    """One fact in one place: the OpenAPI's limits are read from the models."""
    schema = make_client().get("/openapi.json").json()["components"]["schemas"]["RevisionIn"]["properties"]
    assert schema["sha"]["maxLength"] == max_length(Revision.sha) == 64
    assert schema["base_sha"]["anyOf"][0]["maxLength"] == max_length(Revision.base_sha)
    assert schema["branch"]["anyOf"][0]["maxLength"] == max_length(Revision.branch)


@pytest.mark.parametrize("path", ["/api/v1/kernels/a%00b/history?metric=x", "/api/v1/kernels/ab/history?metric=x%00",
                                  "/kernels/a%00b", "/kernels/ab?gpu=%00",
                                  f"/api/v1/kernels/{'k' * 201}/history?metric=x"])
def test_a_name_no_column_can_hold_is_a_422_not_a_500(make_client, path):
    """PostgreSQL refuses NUL even in a comparison: `GET /kernels/a%00b` was a 500 there."""
    _ok(make_client().get(path), 422)


# --- webhook headers and payloads ---------------------------------------------------------------------

@pytest.fixture
def webhook(database_url, tmp_path):  # noqa: ANN201
    settings = Settings(database_url=database_url, data_dir=tmp_path / "data", github_webhook_secret=SECRET)
    with TestClient(create_app(settings, gate_job=FakePipeline(), sources=FakeSources(),
                               embedded_executor=False)) as client:
        def post(event: str, payload: dict, delivery: str = "d-1"):  # noqa: ANN202
            body = json.dumps(payload).encode()
            return client.post("/api/v1/webhooks/github", content=body, headers={
                "X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": signed(body),
                "Content-Type": "application/json"})
        yield post


def _push(**repository: str) -> dict:
    repo = {"full_name": "octo/flash", "clone_url": "https://github.com/octo/flash.git", "default_branch": "main"}
    return {"ref": "refs/heads/main", "after": "a" * 40, "repository": {**repo, **repository}}


def _pull_request(number: int) -> dict:
    head = {"sha": "b" * 40, "ref": "feature", "repo": {"full_name": "octo/flash"}}
    base = {"sha": "a" * 40, "ref": "main", "repo": {"full_name": "octo/flash"}}
    return {"action": "opened", "number": number, "repository": _push()["repository"],
            "pull_request": {"number": number, "head": head, "base": base}}


def test_a_delivery_id_longer_than_its_column_is_a_400(webhook):
    """`X-GitHub-Delivery` over 100 characters was a 500 on PostgreSQL."""
    too_long = "d" * (max_length(WebhookDelivery.delivery_id) + 1)
    reply = webhook("push", _push(), delivery=too_long)
    _ok(reply, 400)
    assert "X-GitHub-Delivery must be at most 100" in reply.json()["detail"]
    _ok(webhook("push", _push(), delivery="d" * 100), 202)


@pytest.mark.parametrize(("event", "payload", "field"), [
    ("pull_request", _pull_request(2**31), "number"),
    ("pull_request", _pull_request(0), "number"),
    ("push", _push(full_name="octo/" + "n" * max_length(Repository.name)), "repository.full_name"),
    ("push", _push(default_branch="m" * 201), "repository.default_branch"),
    ("push", {**_push(), "ref": "refs/heads/" + "b" * 201}, "ref"),
    ("push", _push(clone_url="https://github.com/octo/fl\x00ash.git"), "repository.clone_url"),
])
def test_a_signed_payload_value_no_column_can_hold_is_a_422_naming_it(webhook, event, payload, field):
    """A pull request number of 2**31 or a 301-character repository name was a 500 on PostgreSQL."""
    reply = webhook(event, payload)
    _ok(reply, 422)
    assert f"{field}:" in reply.json()["detail"]


# --- ids beyond what an INTEGER column holds ---------------------------------------------------------

@pytest.mark.parametrize("big", OUT_OF_RANGE_IDS)
def test_ids_beyond_32_bits_and_negative_ids_are_404_on_every_route(make_client, big):
    """PostgreSQL's int4 ids: `integer out of range` was a 500 on four routes (2**31); beyond
    2**63 SQLite failed too (`Python int too large to convert to SQLite INTEGER`)."""
    client = make_client()
    for path in (f"/api/v1/revisions/{big}", f"/api/v1/artifacts/{big}", f"/revisions/{big}",
                 f"/compare?a={big}&b=1", f"/compare?a=1&b={big}"):
        _ok(client.get(path), 404)


# --- 422s do not echo what they refuse ---------------------------------------------------------------

def test_a_422_for_a_10mb_field_names_it_without_echoing_it(make_client):
    """FastAPI's handler returned each error's `input`: a 10 MB `repo` came back whole."""
    reply = make_client().post("/api/v1/revisions", json={"repo": "r" * 10_000_000, "sha": "HEAD"})
    _ok(reply, 422)
    assert len(reply.content) < 2_000
    (error,) = reply.json()["detail"]
    assert error["loc"] == ["body", "repo"] and "at most 2000 characters" in error["msg"]
    assert "input" not in error and error["ctx"] == {"max_length": 2000}


def test_a_422_lists_a_bounded_number_of_errors_and_small_inputs(make_client):
    body = {"repo": "/srv/flash", "sha": "-x", "kernels": ["-bad"] * 200, "extra": 1}
    reply = make_client().post("/api/v1/revisions", json=body)
    _ok(reply, 422)
    detail = reply.json()["detail"]
    assert len(detail) == MAX_ERRORS + 1 and detail[-1]["type"] == "too_many_errors"
    assert detail[0] == {"loc": ["body", "sha"], "msg": "String should match pattern "
                         "'^[A-Za-z0-9_.][A-Za-z0-9_./~^@{}+-]*$'", "type": "string_pattern_mismatch",
                         "input": "-x", "ctx": {"pattern": "^[A-Za-z0-9_.][A-Za-z0-9_./~^@{}+-]*$"}}


# --- times with their offset ------------------------------------------------------------------------

def _aware_utc(value: str | None) -> None:
    if value is not None:
        parsed = datetime.fromisoformat(value)
        assert parsed.utcoffset() is not None and parsed.utcoffset().total_seconds() == 0, value


def test_every_time_the_api_states_is_utc_with_its_offset(make_client, repo_dir):
    """Times were stored naive and sent naive (`2026-01-02T03:04:05`): not an RFC 3339 date-time,
    and a reader could not tell the zone. The commit's `+01:00` is now `02:04:05Z`."""
    client = make_client()
    body = _wait_done(client, client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD"})
                      .json()["status_url"])
    assert datetime.fromisoformat(body["committed_at"]).isoformat() == "2025-01-02T02:04:05+00:00"
    (job,) = body["jobs"]
    for value in (body["committed_at"], body["submitted_at"], job["queued_at"], job["started_at"],
                  job["finished_at"], job["verdict"]["created_at"], *(e["at"] for e in job["events"])):
        assert value is not None
        _aware_utc(value)
    (kernel,) = client.get("/api/v1/kernels").json()
    for latest in kernel["latest"]:
        _aware_utc(latest["at"])
    history = client.get("/api/v1/kernels/attn/history", params={"metric": "latency_median_us"}).json()
    points = [p for s in history["series"] for p in s["points"]]
    assert points and all(_aware_utc(p["committed_at"]) is None for p in points)
