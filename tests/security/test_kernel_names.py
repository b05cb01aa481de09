"""Kernel names have a length limit, stated once and checked at both edges (issue 44: a kernel of
250 characters ended its job `error`: a folder name over 255 bytes on SQLite, `DataError` from the
200-character column on PostgreSQL). The manifest refuses it naming the key; the API refuses a
longer name in `kernels` with a 422 naming the field."""

from __future__ import annotations

from gate.manifest.load import MAX_KERNEL_NAME_CHARS
from gate.storage.limits import JOB_KERNEL_CHARS
from tests.security.conftest import GATE_TOML, make_repo

LONG = "k" * 250


def test_a_long_kernel_name_is_refused_at_the_manifest_and_at_the_api(make_server, tmp_path):
    assert MAX_KERNEL_NAME_CHARS <= JOB_KERNEL_CHARS          # what the manifest takes, the column holds
    sha = make_repo(tmp_path / "repo", {"gate.toml": GATE_TOML.replace('name = "attn"', f'name = "{LONG}"'),
                                        "attn.cu": "// v1\n"})
    server = make_server(GATE_ALLOW_LOCAL_REPOS="1").start()

    from_manifest = server.submit(str(tmp_path / "repo"), sha, timeout=30)       # a local plan is awaited
    assert from_manifest.status_code == 422, from_manifest.text
    (problem,) = from_manifest.json()["detail"]
    assert f"kernel[0].name: 250 characters; at most {MAX_KERNEL_NAME_CHARS}" in problem["msg"], problem
    assert server.revision(from_manifest.json()["id"])["jobs"] == []

    from_api = server.request("POST", "/api/v1/revisions", json={"repo": str(tmp_path / "repo"), "sha": sha,
                                                                 "kernels": [LONG]})
    assert from_api.status_code == 422 and from_api.json()["detail"][0]["loc"] == ["body", "kernels", 0], from_api.text
    assert f"at most {MAX_KERNEL_NAME_CHARS} characters" in from_api.json()["detail"][0]["msg"]
    server.assert_no_server_paths()
    server.stop()
