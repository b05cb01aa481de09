"""`GET /api/v1/kernels/{name}/history` names, per point, the rules that gave its verdict (at its
shape) and the row that decided it: the same rows the revision's own page states (issue 45 item 2)."""

from __future__ import annotations

from gate.domain.verdict import VERDICT_OF_OUTCOME
from gate.sample import seed_judged_history
from gate.storage.unit import UnitOfWork

KERNEL = "flashcore_wmma"


def test_history_points_name_the_rules_that_failed_there(make_client, session_factory):  # noqa: ANN001
    with session_factory() as session:
        seed_judged_history(UnitOfWork(session), revisions=40, kernels=[KERNEL], a100=False, stages=False,
                            queue=False)
    client = make_client(embedded_executor=False)
    series = client.get(f"/api/v1/kernels/{KERNEL}/history", params={"metric": "latency_median_us"}).json()["series"]
    checked = 0
    for s in series:
        for p in s["points"]:
            (job,) = [j for j in client.get(f"/api/v1/revisions/{p['revision_id']}").json()["jobs"]
                      if j["kernel"] == KERNEL and j["verdict"]]
            rows = job["verdict"]["rules"]
            failed = {r["rule"] for r in rows if VERDICT_OF_OUTCOME.get(r["outcome"]) == p["verdict"]
                      and r.get("shape", "") in ("", s["shape"])}
            assert set(p["failed_rules"]) == failed, (p["revision_id"], s["shape"], rows)
            decisive = [" ".join(filter(None, (r["rule"], r.get("shape"), r.get("dtype"))))
                        for r in rows if r.get("decisive")]
            assert p["deciding"] == ("" if p["verdict"] == "accept" else decisive[0]), p
            checked += bool(failed)
    assert checked, "the sample rejects some revision"
