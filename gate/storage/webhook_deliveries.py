"""`X-GitHub-Delivery` ids already seen, so a redelivered webhook creates no second revision."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gate.storage.models import Revision, RevisionStatus, WebhookDelivery


def first_delivery(session: Session, delivery_id: str, event: str) -> WebhookDelivery | None:
    """Store `delivery_id` (flushed, not committed); None when it was received before (the session
    is then rolled back). The unique constraint decides, so two racing requests cannot both win."""
    delivery = WebhookDelivery(delivery_id=delivery_id, event=event)
    session.add(delivery)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        return None
    return delivery


def link_revision(session: Session, delivery: WebhookDelivery, revision_id: int) -> None:
    """Record which revision `delivery` stored (a redelivery answers with it) and commit."""
    delivery.revision_id = revision_id
    session.commit()


def delivered_revision(session: Session, delivery_id: str) -> int | None:
    """The revision an earlier delivery with this id stored, if any."""
    earlier = session.scalar(select(WebhookDelivery).where(WebhookDelivery.delivery_id == delivery_id))
    return earlier.revision_id if earlier else None


def set_merge_base(session: Session, revision_id: int, base_sha: str) -> bool:
    """Time a not yet planned revision against `base_sha` (a PR's merge base) and commit; False when
    the revision is gone or already has jobs."""
    revision = session.get(Revision, revision_id)
    if revision is None or revision.jobs:
        return False
    revision.base_sha = base_sha
    session.commit()
    return True


def judged_revision(session: Session, repository_id: int, sha: str, pull_request: int | None) -> int | None:
    """The newest webhook revision of this commit and event (a push, or pull request `pull_request`)
    already judged: done, planned without error. A replay with a new delivery id returns it instead
    of gating the commit again (issue 24); a cancelled or unplannable one may be gated again."""
    event = Revision.pull_request.is_(None) if pull_request is None else Revision.pull_request == pull_request
    return session.scalar(
        select(Revision.id).where(Revision.repository_id == repository_id, Revision.sha == sha,
                                  Revision.source == "webhook", Revision.status == RevisionStatus.DONE,
                                  Revision.error.is_(None), event)
        .order_by(Revision.id.desc()).limit(1))
