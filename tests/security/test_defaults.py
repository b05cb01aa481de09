"""Server defaults safe for the internet (issue 24): with the default settings any client could
gate any repository on the server's disk, the gate's own mirrors of private repositories included;
a remote URL refused by policy was answered 202 and refused later; `gate run` let git ssh to a
bracketed private address. Issue 44: `::127.0.0.1`, multicast and other non-global addresses passed
the public-address check."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.api.serve_process import gate_env
from tests.security.conftest import GATE_TOML, TOKEN, make_repo

REFUSED_REMOTES = [
    ("http://github.com/acme/k.git", "scheme 'http' is not allowed"),
    ("https://127.0.0.1/acme/k.git", "not a public address"),
    ("https://[::1]/acme/k.git", "not a public address"),
    ("git@[127.0.0.1:22]:acme/k", "not a public address"),
    ("ssh://[127.0.0.1]:22/x", "malformed repository URL"),
    ("ext::sh -c touch% /tmp/pwned", "refusing repository"),
    # Issue 44: Python's `is_global` let these through.
    ("https://[::127.0.0.1]/acme/k.git", "not a public address"),        # IPv4-compatible IPv6
    ("https://[::ffff:127.0.0.1]/acme/k.git", "not a public address"),   # IPv4-mapped
    ("https://[64:ff9b::a00:1]/acme/k.git", "not a public address"),     # NAT64 of 10.0.0.1
    ("https://[2002:7f00:1::1]/acme/k.git", "not a public address"),     # 6to4 of 127.0.0.1
    ("https://224.0.0.1/acme/k.git", "not a public address"),            # multicast
    ("https://239.255.255.250/acme/k.git", "not a public address"),
    ("https://[ff02::1]/acme/k.git", "not a public address"),
    ("https://[fec0::1]/acme/k.git", "not a public address"),            # site-local
    ("https://0.0.0.0/acme/k.git", "not a public address"),
    ("https://100.64.0.1/acme/k.git", "not a public address"),           # shared (carrier NAT)
    ("https://240.0.0.1/acme/k.git", "not a public address"),            # reserved
]


def test_the_default_server_refuses_local_paths_and_policy_refused_remotes_at_submission(make_server, tmp_path):
    repo = tmp_path / "repo"
    make_repo(repo, {"gate.toml": GATE_TOML, "attn.cu": "// v1\n"})
    server = make_server().start()
    local = server.submit(str(repo))
    assert local.status_code == 422 and "GATE_ALLOW_LOCAL_REPOS" in local.text, local.text
    for url, why in REFUSED_REMOTES:
        reply = server.submit(url, "main")
        assert reply.status_code == 422 and why in reply.text, (url, reply.status_code, reply.text)
    assert server.request("GET", "/api/v1/revisions/1").status_code == 404      # nothing was stored
    server.assert_no_server_paths()


def test_the_data_folder_is_never_gateable_even_with_local_repositories_allowed(make_server, tmp_path):
    repo = tmp_path / "repo"
    make_repo(repo, {"gate.toml": GATE_TOML, "attn.cu": "// v1\n"})
    server = make_server(GATE_ALLOW_LOCAL_REPOS="1").start()
    first = server.submit(str(repo))
    assert first.status_code == 202, first.text
    mirrors = sorted((server.data_dir / "mirrors").glob("*.git"))
    assert mirrors, "the gate keeps a mirror of what it gated"
    for inside in (mirrors[0], server.data_dir, f"file://{mirrors[0]}"):
        reply = server.submit(str(inside))
        assert reply.status_code == 422 and "data folder" in reply.text, (inside, reply.text)
    server.assert_no_server_paths()


def test_reads_need_the_token_when_the_setting_says_so(make_server):
    server = make_server(GATE_API_TOKEN=TOKEN, GATE_READ_TOKEN_REQUIRED="1").start()
    for path in ("/", "/api/v1/kernels", "/revisions/1", "/api/v1/revisions/1"):
        refused = server.request("GET", path)
        assert refused.status_code == 401 and "GATE_READ_TOKEN_REQUIRED" in refused.text, path
    assert server.request("GET", "/healthz").status_code == 200
    allowed = server.request("GET", "/api/v1/kernels", headers={"Authorization": f"Bearer {TOKEN}"})
    assert allowed.status_code == 200


@pytest.mark.parametrize("url", ["git@[127.0.0.1:22]:x", "localhost:x"])
def test_gate_run_does_not_let_git_ssh_to_a_private_address(tmp_path, url):
    ran = subprocess.run([sys.executable, "-m", "gate.cli", "run", "--repo", url, "--sha", "main"],
                         env=gate_env(GATE_DATA_DIR=str(tmp_path / "data")), capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert ran.returncode != 0 and "not a public address" in ran.stderr, ran.stderr[-2000:]
