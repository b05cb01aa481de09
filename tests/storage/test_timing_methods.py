"""The timing method of each shape is chosen by the first job and handed to every later one (issue 25)."""

from __future__ import annotations

from gate.storage.models import Job, Repository, Revision, StageRecord
from gate.storage.timing_methods import kept_methods


def _bench(session, repo, i, shapes, *, kernel="k", gpu="NVIDIA H100", status="passed"):  # noqa: ANN001
    rev = Revision(repository=repo, sha=f"{i:040x}", message=f"c{i}")
    session.add(rev)
    session.flush()
    job = Job(revision_id=rev.id, kernel=kernel, gpu_kind=gpu, state="done")
    session.add(job)
    session.flush()
    payload = {"status": status, "shapes": [{"shape": s, "dtype": d, "method": m} for s, d, m in shapes]}
    session.add(StageRecord(job_id=job.id, side="joint", stage="bench", status=status, payload=payload))


def test_the_first_job_chooses_and_a_later_flip_is_not_kept(session_factory):  # noqa: ANN001
    with session_factory() as s:
        repo = Repository(name="r", url="/r")
        s.add(repo)
        _bench(s, repo, 1, [("softmax_4096", "float16", "events")])
        _bench(s, repo, 2, [("softmax_4096", "float16", "graph"), ("softmax_8192", "float16", "graph")])
        _bench(s, repo, 3, [("softmax_4096", "float16", "graph")], gpu="NVIDIA H200")     # another GPU kind
        _bench(s, repo, 4, [("softmax_4096", "bfloat16", "graph")], kernel="other")        # another kernel
        _bench(s, repo, 5, [("softmax_16k", "float16", "graph")], status="failed")         # no figure kept
        s.commit()
        assert kept_methods(s, repo.id, "k", "NVIDIA H100") == {"softmax_4096/float16": "events",
                                                                "softmax_8192/float16": "graph"}
        assert kept_methods(s, repo.id, "k", "NVIDIA H200") == {"softmax_4096/float16": "graph"}
        assert kept_methods(s, repo.id, "new", "NVIDIA H100") == {}
