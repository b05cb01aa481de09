"""The periodic sweep: a daemon thread that runs `Sender.sweep` every few seconds, and at once
after a transaction that stored notifications commits (so `pending` reaches GitHub promptly).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction

from gate.notify.sender import Sender

log = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 5.0

_due = threading.Event()     # set when new rows were committed


_WAKE_KEY = "gate.notify.wake"


def wake_after_commit(session: Session) -> None:
    """Wake the sweepers once `session`'s outermost transaction ends (rows are not visible before).

    Not `after_commit` on the session: that also fires when a SAVEPOINT is released, and the
    executor calls the listeners inside one (`begin_nested`), before its real commit.
    """
    session.info[_WAKE_KEY] = True


@event.listens_for(Session, "after_transaction_end")
def _wake(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None and session.info.pop(_WAKE_KEY, False):
        _due.set()


class Sweeper:
    """Runs `sender.sweep(session_factory)` until `stop()`; a failed sweep is logged, not fatal."""

    def __init__(self, sender: Sender, session_factory: Callable[[], Session],
                 interval_s: float = SWEEP_INTERVAL_S):
        self.sender = sender
        self.session_factory = session_factory
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gate-notify-sweeper", daemon=True)

    def start(self) -> Sweeper:
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        _due.set()
        self._thread.join(timeout_s)
        self.sender.client.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            _due.clear()
            try:
                self.sender.sweep(self.session_factory)
            except Exception:     # the database may be briefly away; the next sweep retries
                log.exception("notification sweep failed")
            _due.wait(self.interval_s)
