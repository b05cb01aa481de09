"""What the dashboards and the JSON API read about kernels: overview rows, the queue, recent
revisions and each kernel's metric series. Plain values (dataclasses, numpy columns): the storage
fills them (`gate.storage.dashboard`, `gate.storage.kernel_series`), the figures and the API read
them, and neither of those imports the storage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from gate.domain.verdict import RuleRow

Trace = tuple[str, str, str]                          # (metric name, shape, series)
RevisionMeta = tuple[str, datetime | None, str]       # sha, commit date, first line of the message
TracesOf = Callable[[Sequence[str], Sequence[str]], list[Trace]]   # (shapes, archs) -> what a page draws


@dataclass(frozen=True)
class LatestVerdict:
    gpu_kind: str
    verdict: str
    reason: str
    revision_id: int
    sha: str
    at: datetime


@dataclass(frozen=True)
class KernelSummary:
    name: str
    revisions: int                       # revisions with a verdict for this kernel (any GPU)
    latest: list[LatestVerdict]          # one per GPU kind, newest revision first


@dataclass(frozen=True)
class QueueEntry:
    job_id: int
    revision_id: int
    sha: str
    kernel: str
    gpu_kind: str
    state: str
    progress: str
    worker: str
    queued_at: datetime
    started_at: datetime | None


@dataclass(frozen=True)
class RevisionRow:
    id: int
    sha: str
    branch: str
    message: str
    author: str
    submitted_at: datetime
    status: str
    verdicts: list[tuple[str, str, str]]   # (kernel, gpu_kind, verdict)


@dataclass(frozen=True)
class HistoryPoint:
    """One point of a trace, for the JSON API; pages read `SeriesHistory`'s columns instead."""

    x: int                      # commit order: the point's place on the default branch's line (0 =
                                # oldest); off the branch, the line place it is drawn beside
    revision_id: int            # the revision a click opens (a bucket's newest)
    sha: str
    committed_at: datetime | None
    message: str
    verdict: str                # "" when none stored; a bucket's worst
    value: float                # the value, or a bucket's mean
    low: float                  # = value for single points; a bucket's minimum
    high: float
    count: int                  # revisions behind this point (1 unless aggregated)
    failed_rules: list[str] = field(default_factory=list)   # the rules that gave `verdict` (at its shape)
    deciding: str = ""          # the row that decided `verdict`: "rule shape dtype"; "" for an accept


@dataclass(frozen=True, eq=False)
class SeriesHistory:
    """One trace in commit order, as columns of equal length: a page draws straight from these
    (a kernel page has ~8,000 points; an object per point cost more than the rest of the build).
    On the line, x is each point's place on the default branch (`gate.storage.commit_order`); off
    it, the place a point is drawn beside, and every point is one revision."""

    name: str                   # metric name, e.g. latency_median_us
    shape: str
    series: str                 # candidate, sdpa_flash, sm_90a, ...
    unit: str
    x: np.ndarray               # int64: line place of the point's (last) revision, 0 = oldest
    revision_ids: np.ndarray    # int64: the revision a click opens (a bucket's newest)
    value: np.ndarray           # float64: the value, or a bucket's mean
    low: np.ndarray             # = value for single points; a bucket's minimum
    high: np.ndarray
    count: np.ndarray           # int64: revisions behind each point (1 unless aggregated)
    verdicts: list[str]         # per point; a bucket's worst, "" when none stored
    # per point: the environment key (GPU | driver | clock policy, "" = unknown); a bucket never
    # mixes two. Empty: one unnamed environment.
    environments: list[str] = field(default_factory=list)
    # per point: the rules whose outcome gave its verdict at its revision (a bucket: at each of its
    # revisions with the bucket's verdict), at the point's shape or the whole kernel's. A page marks a
    # point by verdict only on a figure one of them judges (issue 45). Empty: none.
    failed: list[tuple[str, ...]] = field(default_factory=list)
    # per point: the row that decided its verdict, "rule shape dtype" ("" for an accept), for the hover
    deciding: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.x.size)


@dataclass(frozen=True)
class KernelHistory:
    kernel: str
    gpu_kind: str
    revisions: int              # revisions with a verdict on this GPU kind
    bucket_revisions: int       # 1 = every revision is a point
    series: list[SeriesHistory]
    details: dict[int, RevisionMeta] = field(default_factory=dict)   # of every point's revision
    # revision id -> "reused from <sha> job <id>, <date>": revisions whose job measured nothing and
    # took an earlier job's figures (docs/reuse.md)
    reused: dict[int, str] = field(default_factory=dict)
    # The same traces' points of revisions off the default branch (pull requests' heads, other
    # branches): drawn apart, never on the line nor in its change points.
    off_branch: list[SeriesHistory] = field(default_factory=list)


@dataclass(frozen=True)
class KernelPage:
    """What a kernel's page shows: one GPU kind, one shape or all, and the choices the page offers."""

    kernel: str
    gpu: str                    # the GPU kind shown
    gpus: list[str]             # every GPU kind with a verdict, the newest first
    shape: str                  # the shape shown; "" = every shape
    shapes: list[str]
    history: KernelHistory
    rules: list[RuleRow]        # the newest verdict's rule table (its thresholds are drawn)
    peers: dict[str, dict[tuple[str, str], float]]   # chart key -> (shape, peer) -> level


def history_points(s: SeriesHistory, details: dict[int, RevisionMeta]) -> list[HistoryPoint]:
    """`s` as point objects, with each revision's sha, date and message from `details`."""
    failed = s.failed or [()] * len(s)
    deciding = s.deciding or [""] * len(s)
    return [HistoryPoint(x, rev, *details[rev], verdict, value, low, high, count, list(rules), why)
            for x, rev, value, low, high, count, verdict, rules, why in zip(
                s.x.tolist(), s.revision_ids.tolist(), s.value.tolist(), s.low.tolist(),
                s.high.tolist(), s.count.tolist(), s.verdicts, failed, deciding)]
