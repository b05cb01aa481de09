import httpx

from gate.notify import github_status
from gate.services import outbox as sweeper
from gate.storage import outbox
from gate.notify.retry import RetryPolicy
from gate.notify.sender import Sender
from tests.notify.conftest import SHA


def test_wake_waits_for_the_outermost_commit_not_a_savepoint(session_factory):
    outbox._due.clear()
    with session_factory() as session:
        with session.begin_nested():          # the executor calls listeners inside a SAVEPOINT
            outbox.wake_after_commit(session)
        assert not outbox._due.is_set()
        session.commit()
    assert outbox._due.is_set()


def test_running_sweeper_delivers_a_row_soon_after_its_commit(store, session_factory, github):
    sender = Sender(client=httpx.Client(), github_token="test-token", policy=RetryPolicy(attempts=1))
    running = sweeper.Sweeper(sender, store, interval_s=60).start()
    try:
        body = github_status.status_body("pending", "queued", "gate/k", "https://gate.example.com/revisions/1")
        with session_factory() as session:
            outbox.add(session, [github_status.new_status(github.url, "octo/flashcore", SHA, body, None)])
            session.commit()
        github.wait_for(lambda: github.accepted("POST", "/statuses/"), timeout_s=60 / 2)   # a wake-up, not the 60 s poll
    finally:
        running.stop()
