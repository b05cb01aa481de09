"""What may be fetched, and within which limits (issue 12, item 3): real git against local repositories
and loopback servers that misbehave."""

import re
import socket
import subprocess
import threading
import tracemalloc
from pathlib import Path

import pytest

from gate.errors import SourceError
from gate.sources.policy import FetchPolicy, FetchRefused, url_kind
from gate.sources.mirror import Mirror

MiB = 1 << 20


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def repo_with_blob(path: Path, size: int) -> tuple[Path, str]:
    path.mkdir()
    git(path, "init", "-q")
    (path / "blob.bin").write_bytes(bytes(range(256)) * (size // 256))   # compresses, like real code
    git(path, "add", ".")
    git(path, "commit", "-qm", "blob")
    return path, git(path, "rev-parse", "HEAD")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/x.git", "https://localhost/x.git", "https://10.1.2.3/x",
                                 "https://[::1]/x", "ssh://git@192.168.0.1/x", "git@169.254.169.254:x/y.git",
                                 "https://[::ffff:127.0.0.1]/x"])
def test_private_and_loopback_hosts_are_refused_by_default(url):
    policy = FetchPolicy(schemes=("https", "ssh", "http"))
    with pytest.raises(FetchRefused, match="not a public address"):
        policy.check(url)


@pytest.mark.parametrize("url", ["git://example.org/x.git", "ftp://example.org/x", "ext::sh -c touch% PWNED",
                                 "fd::17", "-uhelp"])
def test_schemes_outside_the_allowed_set_are_refused(url):
    with pytest.raises(FetchRefused):
        FetchPolicy().check(url)


def test_ext_transport_never_runs_its_command(tmp_path):
    mirror = Mirror(tmp_path / "mirrors")
    with pytest.raises(SourceError):
        mirror.update(f"ext::sh -c touch% {tmp_path}/PWNED")
    assert not (tmp_path / "PWNED").exists()


def test_allowed_repos_patterns_limit_what_is_fetched(tmp_path):
    repo, _ = repo_with_blob(tmp_path / "acme", 1024)
    policy = FetchPolicy(allowed=(f"{tmp_path}/acme", "https://github.com/acme/*"))
    policy.check(str(repo))
    with pytest.raises(FetchRefused, match="GATE_ALLOWED_REPOS"):
        policy.check("https://github.com/other/kernels")
    with pytest.raises(FetchRefused, match="GATE_ALLOWED_REPOS"):
        policy.check(str(tmp_path / "elsewhere"))
    assert FetchPolicy.from_env({"GATE_ALLOWED_REPOS": "https://a/*, https://b/*"}).allowed == \
        ("https://a/*", "https://b/*")


def test_a_remote_that_never_answers_times_out_and_leaves_no_mirror(tmp_path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        held = []
        threading.Thread(target=lambda: held.append(server.accept()), daemon=True).start()
        url = f"git://127.0.0.1:{server.getsockname()[1]}/x.git"
        mirror = Mirror(tmp_path / "mirrors", FetchPolicy(schemes=("git",), allow_private_hosts=True,
                                                          timeout_s=2))
        # The remote holds the connection for ever: only the 2 s limit can end the fetch, and says so.
        with pytest.raises(SourceError, match="timed out after 2 s"):
            mirror.update(url)
        assert not mirror.path(url).exists()
        for connection, _ in held:
            connection.close()


def test_a_clone_beyond_the_size_limit_is_stopped(tmp_path):
    repo, _ = repo_with_blob(tmp_path / "big", 64 * MiB)
    git(repo, "config", "core.compression", "0")
    git(repo, "repack", "-adq", "--depth=0", "--window=0", "-F")
    mirror = Mirror(tmp_path / "mirrors", FetchPolicy(max_bytes=4 * MiB))
    with pytest.raises(SourceError, match="exceeded"):
        mirror.update(str(repo))
    assert not mirror.path(str(repo)).exists()


def test_git_errors_keep_the_real_cause(tmp_path):
    (tmp_path / "not-a-repo").mkdir()
    with pytest.raises(SourceError) as info:      # git's last line here is "and the repository exists."
        Mirror(tmp_path / "mirrors").update(f"file://{tmp_path}/not-a-repo")
    message = str(info.value)
    assert "does not appear to be a git repository" in message      # the cause, not only the last line
    assert "Could not read from remote repository" in message


def test_a_checkout_streams_and_does_not_hold_the_tree_in_memory(tmp_path):
    repo, sha = repo_with_blob(tmp_path / "repo", 48 * MiB)
    mirror = Mirror(tmp_path / "mirrors")
    mirror.update(str(repo))
    tracemalloc.start()
    try:
        mirror.checkout(str(repo), sha, tmp_path / "ws")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (tmp_path / "ws" / "blob.bin").stat().st_size == 48 * MiB
    assert peak < 8 * MiB


@pytest.mark.parametrize(("url", "why"), [
    ("git@[127.0.0.1:22]:x", "not a public address"),      # git reads it as ssh to 127.0.0.1, port 22
    ("[::1]:repo", "not a public address"),
    ("localhost:repo", "not a public address"),            # scp-like without a user is ssh too
    ("ssh://[127.0.0.1]:22/x", "malformed repository URL"),  # urllib raised ValueError in the planner
    ("git@[127.0.0.1:22:x", "unclosed '['"),
])
def test_scp_like_and_malformed_urls_are_refused_before_any_lookup(url, why):
    with pytest.raises(FetchRefused, match=re.escape(why)):
        FetchPolicy().check_static(url)


@pytest.mark.parametrize(("url", "kind"), [
    ("git@github.com:acme/k.git", ("ssh", "github.com")),
    ("git@[2606:4700::1111]:acme/k", ("ssh", "2606:4700::1111")),
    ("./a:b", ("local", "")),                              # a '/' before the ':' is a path, as in git
    ("/srv/repos/k", ("local", "")),
    ("file:///srv/repos/k", ("local", "")),
    ("https://github.com/acme/k", ("https", "github.com")),
])
def test_urls_are_read_as_git_reads_them(url, kind):
    assert url_kind(url) == kind


def test_local_paths_need_the_setting_and_the_data_folder_never_passes(tmp_path):
    data = tmp_path / "data"
    (data / "mirrors" / "x.git").mkdir(parents=True)
    with pytest.raises(FetchRefused, match="GATE_ALLOW_LOCAL_REPOS"):
        FetchPolicy.from_env({}, local_default=False).check_static(str(tmp_path))
    policy = FetchPolicy(allow_local=True).protecting(data)
    policy.check_static(str(tmp_path / "elsewhere"))
    for inside in (data, data / "mirrors" / "x.git", f"file://{data}/mirrors/x.git", f"{data}/mirrors/../mirrors"):
        with pytest.raises(FetchRefused, match="data folder"):
            policy.check_static(str(inside))
