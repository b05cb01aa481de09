"""What a browser is told (issue 44: no CSP, `X-Frame-Options` or `nosniff` was sent, and with no
token `cancel` took cross-site POSTs, so any page a user of the gate's network opened could cancel
revisions). Against a real `gate serve` without a token."""

from __future__ import annotations

from tests.security.silent_remote import SilentRemote
from tests.security.test_silent_remotes import FETCH_SETTINGS


def _script_src(reply) -> str:  # noqa: ANN001
    policy = dict(part.strip().split(" ", 1) for part in reply.headers["content-security-policy"].split(";"))
    assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'", policy
    return policy["script-src"]


def test_pages_carry_a_policy_and_cross_site_writes_are_refused(make_server):
    with SilentRemote() as remote:
        server = make_server(**FETCH_SETTINGS).start()
        queued = server.submit(remote.url("k"), "main").json()["id"]         # stays queued: its remote is silent

        for path in ("/", "/kernels/none", "/api/v1/kernels", "/healthz", "/static/gate.js", "/docs"):
            reply = server.request("GET", path)
            assert reply.headers["x-frame-options"] == "DENY", path
            assert reply.headers["x-content-type-options"] == "nosniff", path
            script_src = _script_src(reply)
            assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src, (path, script_src)
        assert "'sha256-" in _script_src(server.request("GET", "/docs"))    # Swagger UI's own start-up script

        cancel = f"/api/v1/revisions/{queued}/cancel"
        for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
                        {"Sec-Fetch-Site": "same-site", "Origin": server.url}, {"Origin": "null"}):
            reply = server.request("POST", cancel, headers=headers)
            assert reply.status_code == 403 and "another site" in reply.text, (headers, reply.status_code)
        assert server.revision(queued)["status"] == "queued"
        for headers in ({"Origin": server.url}, {"Sec-Fetch-Site": "same-origin", "Origin": server.url}, {}):
            reply = server.request("POST", cancel, headers=headers)          # the page itself, a script, curl
            assert reply.status_code == 200, (headers, reply.text)
        assert server.revision(queued)["status"] == "cancelled"
        server.stop()
