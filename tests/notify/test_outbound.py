import hashlib
import hmac

import httpx

from gate.notify import outbound
from gate.notify.retry import RetryPolicy
from gate.notify.sender import Sender
from gate.services.outbox import sweep
from gate.storage import outbox
from tests.fakes.github_server import FakeGitHub

FAST = RetryPolicy(attempts=3, backoff_s=0.01)


def test_signature_is_hmac_sha256_of_the_raw_body():
    body = b'{"verdict":"accept"}'
    expected = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert outbound.sign("s3cret", body) == expected


def test_verify_refuses_a_missing_or_wrong_signature():
    body = b"{}"
    assert outbound.verify("k", body, outbound.sign("k", body))
    assert not outbound.verify("k", body, None)
    assert not outbound.verify("k", body, outbound.sign("other", body))
    assert not outbound.verify("k", body + b" ", outbound.sign("k", body))


def test_signed_webhook_is_retried_after_5xx_and_accepted_by_the_receiver(store, session_factory):
    with FakeGitHub(webhook_secret="hook-secret") as receiver, httpx.Client() as client:
        receiver.fail("POST", "^/hooks/ci", status=503, times=2)
        with session_factory() as session:
            outbox.add(session, [outbound.new_webhook(f"{receiver.url}/hooks/ci", {"verdict": "reject"}, None)])
            session.commit()
        sender = Sender(client=client, webhook_secret="hook-secret", policy=FAST)
        result = sweep(sender, store)
        assert result.sent == 1
        accepted = receiver.accepted("POST", "^/hooks/ci")
        assert len(accepted) == 1 and accepted[0].body == {"verdict": "reject"}
        assert accepted[0].headers["x-gate-event"] == "verdict"
        assert [r.answered for r in receiver.requests] == [503, 503, 200]


def test_webhook_signed_with_the_wrong_secret_is_refused_and_not_retried(store, session_factory):
    with FakeGitHub(webhook_secret="right") as receiver, httpx.Client() as client:
        with session_factory() as session:
            outbox.add(session, [outbound.new_webhook(f"{receiver.url}/hooks/ci", {"verdict": "accept"}, None)])
            session.commit()
        result = sweep(Sender(client=client, webhook_secret="wrong", policy=FAST), store)
        assert result.failed == 1
        assert len(receiver.requests) == 1
