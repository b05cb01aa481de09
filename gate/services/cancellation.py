"""Cancelling a revision (`POST /api/v1/revisions/{id}/cancel`): the rows, the messages, the children.

The storage ends the revision's queued and running jobs `cancelled` in one transaction, with their
notice; once it committed, the notifier makes its messages (an `error` commit status and a
`cancelled` Check Run, `gate.notify.messages`) and they go to the outbox. Then the executor is told:
the local executor kills its jobs' children at once; a Celery worker kills its child at its next
heartbeat (`claims.HEARTBEAT_S`). A queued job is never started. `cancelled` is final, never `accept`.
"""

from __future__ import annotations

import logging

from gate.domain.executor import Executor
from gate.notify import Notifier
from gate.services.announce import announce
from gate.storage.cancellation import CancelResult
from gate.storage.unit import UnitOfWork

log = logging.getLogger(__name__)


def cancel(uow: UnitOfWork, revision_id: int, executor: Executor, notifier: Notifier) -> CancelResult:
    """Cancel the revision (idempotent) and stop its running children; see `CancelResult`."""
    result = uow.cancellation.cancel_revision(revision_id)
    announce(uow, notifier, result.notice)
    if result.job_ids:
        log.info("revision %s cancelled: jobs %s", revision_id, result.job_ids)
        executor.cancel(result.job_ids)
    return result
