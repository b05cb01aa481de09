"""The after-commit hand-off: an event the storage committed (its `Notice`, stored in the event's
transaction) goes to the notifier the service was composed with, and the messages it makes go to
the outbox in the transaction that takes (deletes) the notice. An event whose transaction rolled
back left no notice and is never announced; a committed one is announced once (`Notices.hand_off`
decides between two processes): by `announce` right after its commit or, when that process died
between the two commits, by the sweeper (`announce_due`).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from gate.domain.clock import utcnow
from gate.domain.notices import Notice
from gate.notify import Notifier
from gate.storage.unit import Store, UnitOfWork

log = logging.getLogger(__name__)

# A notice this old and still unhanded lost its process: the sweeper hands it. Younger ones are left
# to the process that stored them (it hands them right after its commit, within milliseconds).
RECOVER_AFTER_S = 60.0


def announce(uow: UnitOfWork, notifier: Notifier, notice: Notice | None) -> bool:
    """Hand a committed event to `notifier` and store its messages; False when there was nothing to
    hand, another process handed it, or storing failed (logged: the event stands, and an unhanded
    notice is tried again by the sweeper)."""
    if notice is None:
        return False
    try:
        return uow.notices.hand_off(notice.id, notifier.deliveries(notice))
    except Exception:
        uow.rollback()
        log.exception("notice %s (%s of jobs %s): the messages were not stored", notice.id, notice.kind,
                      [j.job_id for j in notice.jobs])
        return False


def announce_due(store: Store, notifier: Notifier, now: datetime | None = None,
                 recover_after_s: float = RECOVER_AFTER_S) -> int:
    """Hand every notice left unhanded for `recover_after_s`; how many this call handed."""
    before = (now or utcnow()) - timedelta(seconds=recover_after_s)
    with store.unit() as uow:
        due = uow.notices.unhanded(before)
    handed = 0
    for notice in due:
        with store.unit() as uow:
            handed += announce(uow, notifier, notice)
    if handed:
        log.warning("handed %d notices their process left unannounced", handed)
    return handed
