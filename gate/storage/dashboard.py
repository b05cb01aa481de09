"""Read queries behind the overview page, the banners of every page, the compare page and
`GET /api/v1/kernels`: each kernel's latest verdicts, the queue, the recent revisions (`uow.overview`).
All reads, no writes."""

from __future__ import annotations

from sqlalchemy import func, select

from gate.domain.names import Side
from gate.domain.wording import NO_GPU
from gate.read_models.kernel_series import KernelSummary, LatestVerdict, QueueEntry, RevisionRow
from gate.read_models.revision import RevisionMetric
from gate.storage.db import Queries
from gate.storage.models import Job, JobState, Metric, Revision, VerdictRecord
from gate.storage.samples import SYNTHETIC


class Overview(Queries):
    """`uow.overview`."""

    def kernel_overview(self) -> list[KernelSummary]:
        """Every kernel with its latest verdict per GPU kind."""
        latest_ids = (
            select(func.max(VerdictRecord.id))
            .group_by(VerdictRecord.kernel, VerdictRecord.gpu_kind)
            .scalar_subquery()
        )
        rows = self._session.execute(
            select(VerdictRecord.kernel, VerdictRecord.gpu_kind, VerdictRecord.verdict,
                   VerdictRecord.reason, VerdictRecord.revision_id, Revision.sha,
                   VerdictRecord.created_at)
            .join(Revision, Revision.id == VerdictRecord.revision_id)
            .where(VerdictRecord.id.in_(latest_ids))
            # Newest first, as the kernel page's GPU selector (`KernelSeries.gpu_kinds`): the GPU
            # a card lists first is the one its kernel page opens on.
            .order_by(VerdictRecord.kernel, VerdictRecord.revision_id.desc(), VerdictRecord.id.desc())
        ).all()
        counts = dict(self._session.execute(
            select(VerdictRecord.kernel, func.count(func.distinct(VerdictRecord.revision_id)))
            .group_by(VerdictRecord.kernel)
        ).all())
        by_kernel: dict[str, list[LatestVerdict]] = {}
        for kernel, gpu, verdict, reason, rev_id, sha, at in rows:
            by_kernel.setdefault(kernel, []).append(LatestVerdict(gpu, verdict, reason, rev_id, sha, at))
        return [KernelSummary(k, counts.get(k, 0), v) for k, v in sorted(by_kernel.items())]

    def verdicts_version(self) -> tuple[int, int]:
        """(verdicts stored, the newest one's id): changes whenever `kernel_overview` can. Verdicts
        are only ever added; the count is there because ids are not commit order in PostgreSQL (as
        `KernelSeries.data_version`). One count and one max of an index, where `kernel_overview`
        groups every verdict twice (~0.3 s at 400,000 verdicts)."""
        count, newest = self._session.execute(select(func.count(), func.max(VerdictRecord.id))).one()
        return count, newest or 0

    def queue(self) -> list[QueueEntry]:
        """Running jobs first, then waiting ones, oldest first."""
        rows = self._session.execute(
            select(Job.id, Job.revision_id, Revision.sha, Job.kernel, Job.gpu_kind, Job.state,
                   Job.progress, Job.worker, Job.queued_at, Job.started_at)
            .join(Revision, Revision.id == Job.revision_id)
            .where(Job.state.in_([JobState.RUNNING, JobState.QUEUED]))
            .order_by((Job.state == JobState.QUEUED), Job.queued_at, Job.id)
        ).all()
        return [QueueEntry(r[0], r[1], r[2], r[3], r[4], r[5], r[6] or "", r[7] or "", r[8], r[9])
                for r in rows]

    def recent_revisions(self, limit: int = 15) -> list[RevisionRow]:
        """The newest submitted revisions with the verdict of each of their jobs."""
        revs = self._session.execute(
            select(Revision.id, Revision.sha, Revision.branch, Revision.message, Revision.author,
                   Revision.submitted_at, Revision.status)
            .order_by(Revision.id.desc()).limit(limit)
        ).all()
        ids = [r[0] for r in revs]
        verdicts: dict[int, list[tuple[str, str, str]]] = {i: [] for i in ids}
        if ids:
            for rev_id, kernel, gpu, verdict in self._session.execute(
                select(VerdictRecord.revision_id, VerdictRecord.kernel, VerdictRecord.gpu_kind,
                       VerdictRecord.verdict)
                .where(VerdictRecord.revision_id.in_(ids)).order_by(VerdictRecord.kernel)
            ):
                verdicts[rev_id].append((kernel, gpu, verdict))
        return [RevisionRow(r[0], r[1], r[2] or "", (r[3] or "").split("\n", 1)[0], r[4] or "",
                            r[5], r[6], verdicts[r[0]]) for r in revs]

    def has_synthetic_revisions(self) -> bool:
        """Whether any revision is sample data (written by the sample writers, not gated)."""
        found = self._session.scalar(select(Revision.id).where(Revision.source == SYNTHETIC).limit(1))
        return found is not None

    def compared_metrics(self, a: int, b: int) -> list[RevisionMetric]:
        """Every figure of revisions `a` and `b` except the baselines' (each job's own reference),
        ordered by kernel, GPU kind, metric, shape, series."""
        rows = self._session.execute(
            select(Metric.revision_id, Metric.kernel, Metric.gpu_kind, Metric.shape, Metric.name,
                   Metric.series, Metric.value, Metric.unit, Metric.direction)
            .where(Metric.revision_id.in_([a, b]), Metric.series.notin_([Side.BASELINE.value]))
            .order_by(Metric.kernel, Metric.gpu_kind, Metric.name, Metric.shape, Metric.series)
        )
        return [RevisionMetric(*row) for row in rows]

    def unmeasured_verdicts(self) -> tuple[int, int]:
        """(verdicts judged on a machine without a GPU, all verdicts): what the pages' banner says
        was not measured (`gate.domain.wording.NO_GPU` is what such a verdict records as its GPU)."""
        total, cpu = self._session.execute(
            select(func.count(), func.count().filter(VerdictRecord.gpu_kind == NO_GPU))
        ).one()
        return cpu or 0, total or 0
