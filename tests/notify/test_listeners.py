import importlib
import pkgutil

from sqlalchemy import select

from gate import notify
from gate.config import Settings
from gate.domain.verdict import Verdict, VerdictReport
from gate.notify import messages
from gate.notify.listeners import (
    CheckRunListener,
    GitHubStatusListener,
    WebhookListener,
    notifier_for,
    verdict_event,
)
from gate.storage.models import Notification
from gate.storage.queries import job_facts, stored_report
from tests.notify.conftest import PUBLIC_URL, SHA, add_job, finish, store_queued, store_verdict
from tests.notify.sample_reports import REPORTS

API = "https://api.github.example"


def _rows(session) -> list[Notification]:
    return list(session.scalars(select(Notification).order_by(Notification.id)))


def test_queued_jobs_store_one_pending_status_per_kernel_context(session_factory):
    listener = GitHubStatusListener(API, PUBLIC_URL)
    with session_factory() as session:
        jobs = [add_job(session, kernel="a"), add_job(session, kernel="b")]
        store_queued(session, listener, jobs)
        rows = _rows(session)
    assert [r.payload["body"]["context"] for r in rows] == ["gate/a", "gate/b"]
    assert {r.payload["body"]["state"] for r in rows} == {"pending"}
    assert rows[0].url == f"{API}/repos/octo/flashcore/statuses/{SHA}"
    assert rows[0].payload["body"]["target_url"] == f"{PUBLIC_URL}/revisions/{jobs[0].revision_id}"
    assert all(r.state == "pending" and r.job_id is not None for r in rows)


def test_verdict_stores_the_final_state_description_and_target_url(session_factory):
    listener = GitHubStatusListener(API, PUBLIC_URL)
    with session_factory() as session:
        job = add_job(session)
        finish(session, job, REPORTS["reject_bank_conflicts"])
        store_verdict(session, listener, job)
        (row,) = _rows(session)
    body = row.payload["body"]
    assert body["state"] == "failure"
    assert body["context"] == "gate/flashcore_wmma"
    assert body["description"] == messages.describe(REPORTS["reject_bank_conflicts"])
    assert body["target_url"] == f"{PUBLIC_URL}/revisions/{job.revision_id}"


def test_incomplete_verdict_is_stored_as_error_never_success(session_factory):
    with session_factory() as session:
        job = add_job(session)
        finish(session, job, REPORTS["incomplete"])
        store_verdict(session, GitHubStatusListener(API, PUBLIC_URL), job)
        store_verdict(session, CheckRunListener(API, PUBLIC_URL), job)
        status, check = _rows(session)
    assert status.payload["body"]["state"] == "error"
    assert check.payload["body"]["conclusion"] == "action_required"


def test_job_without_a_verdict_reads_as_error(session_factory):
    with session_factory() as session:
        job = add_job(session)
        job.error = "worker lost"
        assert stored_report(job) == VerdictReport(Verdict.ERROR, "worker lost")


def test_local_repository_gets_no_github_notifications(session_factory):
    with session_factory() as session:
        job = add_job(session, repo="flashcore")          # a path's name, not owner/name
        store_queued(session, GitHubStatusListener(API, PUBLIC_URL), [job])
        store_queued(session, CheckRunListener(API, PUBLIC_URL), [job])
        assert _rows(session) == []


def test_check_run_completion_carries_conclusion_title_and_rule_table(session_factory):
    with session_factory() as session:
        job = add_job(session)
        finish(session, job, REPORTS["reject_latency"])
        store_verdict(session, CheckRunListener(API, PUBLIC_URL), job)
        (row,) = _rows(session)
    body = row.payload["body"]
    assert row.payload["action"] == "complete"
    assert body["conclusion"] == "failure" and body["status"] == "completed"
    assert body["output"]["summary"].startswith("### gate/flashcore_wmma: reject")
    assert "| `max_latency_regression_pct` |" in body["output"]["summary"]


def test_webhook_listener_stores_the_verdict_for_every_url(session_factory):
    with session_factory() as session:
        job = add_job(session)
        finish(session, job, REPORTS["accept"])
        store_verdict(session, WebhookListener(["http://a/hook", "http://b/hook"], PUBLIC_URL), job)
        rows = _rows(session)
        event = verdict_event(job_facts(job, job.verdict.fingerprint), stored_report(job), PUBLIC_URL)
    assert [r.url for r in rows] == ["http://a/hook", "http://b/hook"]
    assert rows[0].payload["body"] == event
    assert event["verdict"] == "accept" and event["revision"]["sha"] == SHA
    assert event["rules"][0]["rule"] == "correctness"


def test_the_notifier_has_the_listeners_the_settings_ask_for():
    settings = Settings(github_token="t", github_app_id="1", github_app_private_key="pem",
                        outbound_webhooks=["http://x/hook"])
    chosen = notifier_for(settings).listeners
    assert [type(x).__name__ for x in chosen] == ["GitHubStatusListener", "CheckRunListener", "WebhookListener"]
    assert notifier_for(Settings()).listeners == ()


def test_there_is_no_process_wide_listener_registry():
    """Nothing in the notify package holds listeners at module level: a notifier is composed by its
    service and handed on, never registered."""
    modules = [notify, *(importlib.import_module(f"gate.notify.{m.name}")
                         for m in pkgutil.iter_modules(notify.__path__))]
    for module in modules:
        held = [name for name, value in vars(module).items()
                if isinstance(value, (list, dict, set)) and not name.startswith("__")
                and ("listener" in name.lower()
                     or any(hasattr(v, "verdict") for v in (value.values() if isinstance(value, dict) else value)))]
        assert held == [], f"{module.__name__} holds listeners in {held}"
    assert not hasattr(notify, "register") and not hasattr(notify, "configure")


def test_two_services_in_one_process_do_not_hear_each_others_listeners(session_factory, database_url, tmp_path):
    """Two apps composed side by side (two settings) each send their own messages only."""
    from gate.api.app import create_app

    hooks = create_app(Settings(database_url=database_url, data_dir=tmp_path, outbound_webhooks=["http://a/hook"]),
                       embedded_executor=False)
    quiet = create_app(Settings(database_url=database_url, data_dir=tmp_path), embedded_executor=False)
    with session_factory() as session:
        job = add_job(session)
        finish(session, job, REPORTS["accept"])
        facts, report = job_facts(job, None), stored_report(job)
    assert [d.url for d in hooks.state.gate.notifier.verdict(facts, report)] == ["http://a/hook"]
    assert quiet.state.gate.notifier.verdict(facts, report) == []


def test_cancelled_jobs_get_an_error_status_and_a_cancelled_check_run_never_success(session_factory):
    """A cancelled revision must not leave `pending` forever, nor read as passing."""
    with session_factory() as session:
        facts = [job_facts(add_job(session, kernel="a"))]
    (status,) = GitHubStatusListener(API, PUBLIC_URL).cancelled(facts)
    (check,) = CheckRunListener(API, PUBLIC_URL).cancelled(facts)
    assert status.payload["body"]["state"] == "error" and "cancelled" in status.payload["body"]["description"]
    assert status.payload["body"]["context"] == "gate/a"
    assert check.payload["action"] == "complete" and check.payload["body"]["conclusion"] == "cancelled"
    assert WebhookListener(["http://hook"], PUBLIC_URL).cancelled(facts) == []
