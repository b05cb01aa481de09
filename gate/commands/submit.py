"""`gate submit`: hand a revision to a running server; `--wait` follows it to the verdict.

Exit code with --wait, from the worst kernel verdict: error 2 > reject 1 > incomplete or inconclusive
3 > accept 0 (a revision that could not be planned, or was cancelled, counts as error). Without
--wait: 0 once accepted for gating (or an identical submission was already queued or running: the
server returns that revision), 2 if the server refused it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from gate.domain import routes
from gate.domain.verdict import Verdict, worst_verdict
from gate.domain.wording import gpu_words, progress_line

FINAL_STATUSES = ("done", "cancelled")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="submit a revision to a server")
    p.add_argument("--server", required=True, help="base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--repo", required=True, help="local path or git URL")
    p.add_argument("--sha", required=True, help="revision (sha or ref)")
    p.add_argument("--branch", default=None)
    p.add_argument("--base", dest="base_sha", default=None, help="baseline revision")
    p.add_argument("--kernel", action="append", dest="kernels", default=None)
    p.add_argument("--force", action="store_true",
                   help="a new revision even if an identical one is queued or running")
    p.add_argument("--remeasure", action="store_true",
                   help="measure every kernel anew, reusing no earlier job's figures (docs/reuse.md)")
    p.add_argument("--wait", action="store_true", help="follow progress; exit with the verdict's code")
    p.add_argument("--token", default=None, help="bearer token (default: $GATE_API_TOKEN)")


def exit_code(revision: dict) -> int:
    """Worst verdict wins: error 2 > reject 1 > incomplete/inconclusive 3 > accept 0."""
    if revision.get("error"):
        return 2
    worst = worst_verdict(j["verdict"]["verdict"] if j.get("verdict") else Verdict.ERROR for j in revision["jobs"])
    return (worst or Verdict.ERROR).exit_code   # no jobs at all: nothing was gated


def verdict_table(revision: dict) -> str:
    rows = [("kernel", "gpu", "verdict", "reason")]
    for job in revision["jobs"]:
        v = job.get("verdict") or {}
        reason = v.get("reason", job.get("error") or "")
        if job.get("reused_from"):        # no GPU work ran: say whose figures these are
            reason = f"{reason} ({job['reused_from']})"
        rows.append((job["kernel"], gpu_words(v.get("gpu_kind", job["gpu_kind"])), v.get("verdict", job["state"]),
                     reason))
    widths = [max(len(str(r[i])) for r in rows) for i in range(3)]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r[:3], widths)) + "  " + str(r[3]) for r in rows)


def follow(client, status_url: str, *, poll_s: float = 1.0, out=sys.stdout) -> dict:  # noqa: ANN001
    """Poll until the revision is done or cancelled, printing one line per job progress change."""
    last: dict[int, str] = {}
    while True:
        response = client.get(status_url)
        response.raise_for_status()
        revision = response.json()
        for job in revision["jobs"]:
            line = progress_line(job["state"], job["progress"])
            if last.get(job["id"]) != line:
                last[job["id"]] = line
                print(f"[{job['kernel']}] {line}", file=out, flush=True)
        if revision["status"] in FINAL_STATUSES:
            return revision
        time.sleep(poll_s)


def main(args: argparse.Namespace) -> int:
    import httpx

    token = args.token or os.environ.get("GATE_API_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    repo = args.repo if "://" in args.repo or "@" in args.repo else os.path.abspath(args.repo)
    body = {"repo": repo, "sha": args.sha, "branch": args.branch, "base_sha": args.base_sha,
            "kernels": args.kernels, "force": args.force or None,
            "remeasure": args.remeasure or None}
    with httpx.Client(base_url=args.server, headers=headers, timeout=30) as client:
        reply = client.post(routes.REVISIONS, json={k: v for k, v in body.items() if v is not None})
        if reply.status_code not in (200, 202, 422):
            print(f"gate submit: the server answered {reply.status_code}: {reply.text}", file=sys.stderr)
            return 2
        created = reply.json()
        if reply.status_code == 422:
            for problem in created.get("detail", []):
                print(f"gate submit: {'.'.join(map(str, problem['loc'][1:]))}: {problem['msg']}", file=sys.stderr)
            if "status_url" not in created:
                return 2
        page = args.server.rstrip("/") + routes.link(routes.REVISION_PAGE, ref=created["id"])
        reused = " (an identical submission already queued or running)" if created.get("reused") else ""
        print(f"revision {created['id']}{reused}: {page}  (API: {created['status_url']})")
        if not args.wait:
            return 0 if reply.status_code in (200, 202) else 2
        # Followed on the server given, never at the `status_url` the answer names: the client sends
        # the bearer token with every request, and another origin must not get it (issue 44).
        revision = follow(client, routes.link(routes.REVISION, revision_id=created["id"]))
    if revision.get("error"):
        print(f"error: {revision['error']}")
    elif revision["status"] == "cancelled":
        print(verdict_table(revision))
        print("cancelled: no verdict")
        return 2
    else:
        print(verdict_table(revision))
    print(f"details: {page}")
    return exit_code(revision)
