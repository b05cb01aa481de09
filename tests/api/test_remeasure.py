"""`"remeasure": true` asks for fresh figures (docs/reuse.md): stored on the revision, which is a new
one even while an identical submission is queued; by default a revision may reuse."""

from sqlalchemy import select

from gate.storage.db import make_engine, make_session_factory
from gate.storage.models import Revision


def test_remeasure_is_stored_and_makes_a_new_revision(make_client, database_url, repo_dir):
    client = make_client(embedded_executor=False)
    body = {"repo": repo_dir, "sha": "b" * 40}
    plain = client.post("/api/v1/revisions", json=body)
    fresh = client.post("/api/v1/revisions", json={**body, "remeasure": True})
    assert (plain.status_code, fresh.status_code) == (202, 202)
    assert fresh.json()["id"] != plain.json()["id"] and not fresh.json()["reused"]
    engine = make_engine(database_url)
    with make_session_factory(engine)() as s:
        stored = dict(s.execute(select(Revision.id, Revision.remeasure)).all())
    engine.dispose()
    assert stored == {plain.json()["id"]: False, fresh.json()["id"]: True}


def test_openapi_documents_remeasure(make_client):
    spec = make_client(embedded_executor=False).get("/openapi.json").json()
    assert "reused" in spec["components"]["schemas"]["RevisionIn"]["properties"]["remeasure"]["description"]
