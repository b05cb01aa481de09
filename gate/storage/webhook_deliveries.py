"""`X-GitHub-Delivery` ids already seen, so a redelivered webhook creates no second revision
(`uow.webhooks`)."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from gate.storage.db import Queries
from gate.storage.models import Revision, RevisionStatus, WebhookDelivery


class WebhookDeliveries(Queries):
    """`uow.webhooks`."""

    def first_delivery(self, delivery_id: str, event: str) -> bool:
        """Store `delivery_id` (flushed, not committed); False when it was received before (the unit
        is then rolled back). The unique constraint decides, so two racing requests cannot both win."""
        self._session.add(WebhookDelivery(delivery_id=delivery_id, event=event))
        try:
            self._session.flush()
        except IntegrityError:
            self._session.rollback()
            return False
        return True

    def link_revision(self, delivery_id: str, revision_id: int) -> None:
        """Record which revision the delivery stored (a redelivery answers with it) and commit."""
        self._session.execute(update(WebhookDelivery).where(WebhookDelivery.delivery_id == delivery_id)
                              .values(revision_id=revision_id))
        self._session.commit()

    def delivered_revision(self, delivery_id: str) -> int | None:
        """The revision an earlier delivery with this id stored, if any."""
        return self._session.scalar(select(WebhookDelivery.revision_id)
                                    .where(WebhookDelivery.delivery_id == delivery_id))

    def set_merge_base(self, revision_id: int, base_sha: str) -> bool:
        """Time a not yet planned revision against `base_sha` (a PR's merge base) and commit; False when
        the revision is gone or already has jobs."""
        revision = self._session.get(Revision, revision_id)
        if revision is None or revision.jobs:
            return False
        revision.base_sha = base_sha
        self._session.commit()
        return True

    def judged_revision(self, repository_id: int, sha: str, pull_request: int | None) -> int | None:
        """The newest webhook revision of this commit and event (a push, or pull request `pull_request`)
        already judged: done, planned without error. A replay with a new delivery id returns it instead
        of gating the commit again (issue 24); a cancelled or unplannable one may be gated again."""
        event = Revision.pull_request.is_(None) if pull_request is None else Revision.pull_request == pull_request
        return self._session.scalar(
            select(Revision.id).where(Revision.repository_id == repository_id, Revision.sha == sha,
                                      Revision.source == "webhook", Revision.status == RevisionStatus.DONE,
                                      Revision.error.is_(None), event)
            .order_by(Revision.id.desc()).limit(1))
