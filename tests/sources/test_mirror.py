"""Mirror and checkout against real git repositories (local paths and file:// URLs)."""

import subprocess

import pytest

from gate.errors import SourceError
from gate.sources.mirror import Mirror
from tests.samples.build import commit_files, make_repo


@pytest.fixture
def sample(tmp_path):
    return make_repo(tmp_path / "src", variants=["compile_error"])


def test_resolve_gives_the_full_sha_of_a_branch_and_of_head(tmp_path, sample):
    repo, shas = sample
    mirror = Mirror(tmp_path / "mirrors")
    assert mirror.resolve(str(repo), "HEAD") == shas["base"]
    assert mirror.resolve(str(repo), "variant/compile_error") == shas["compile_error"]
    assert mirror.resolve(str(repo), shas["base"][:10]) == shas["base"]


def test_checkout_exports_the_exact_tree_without_git_metadata(tmp_path, sample):
    repo, shas = sample
    mirror = Mirror(tmp_path / "mirrors")
    checkout = mirror.checkout(str(repo), shas["compile_error"], tmp_path / "ws")
    kernel = (tmp_path / "ws" / "kernels" / "wmma_gemm.cu").read_text()
    assert checkout.sha == shas["compile_error"]
    assert "zero_value" in kernel
    assert not (tmp_path / "ws" / ".git").exists()


def test_a_sha_that_does_not_exist_is_refused_naming_it(tmp_path, sample):
    repo, _ = sample
    mirror = Mirror(tmp_path / "mirrors")
    with pytest.raises(SourceError, match="'deadbeef' does not exist"):
        mirror.resolve(str(repo), "deadbeef")
    with pytest.raises(SourceError, match="commit " + "ab" * 20 + " does not exist"):
        mirror.checkout(str(repo), "ab" * 20, tmp_path / "ws")


@pytest.mark.parametrize("rev", ["--upload-pack=touch pwned", "-n", "HEAD extra", ""])
def test_revisions_that_look_like_options_are_refused(tmp_path, sample, rev):
    repo, _ = sample
    with pytest.raises(SourceError, match="refusing revision"):
        Mirror(tmp_path / "mirrors").resolve(str(repo), rev)
    assert not (tmp_path / "pwned").exists()


def test_new_commits_are_fetched_into_the_existing_mirror(tmp_path, sample):
    repo, shas = sample
    mirror = Mirror(tmp_path / "mirrors")
    mirror.resolve(str(repo), "HEAD")
    new_sha = commit_files(repo, {"NOTES.md": "later\n"}, "a later commit")
    assert mirror.resolve(str(repo), "main") == new_sha
    assert mirror.commit_info(str(repo), new_sha)["parent_sha"] == shas["base"]


def test_file_urls_work_through_the_mirror(tmp_path, sample):
    repo, shas = sample
    mirror = Mirror(tmp_path / "mirrors")
    url = f"file://{repo}"
    assert mirror.resolve(url, "variant/compile_error") == shas["compile_error"]
    mirror.checkout(url, shas["base"], tmp_path / "ws")
    assert (tmp_path / "ws" / "gate.toml").is_file()
    assert len(list((tmp_path / "mirrors").glob("*.git"))) == 1


def test_commit_info_gives_author_message_time_and_parent(tmp_path, sample):
    repo, shas = sample
    info = Mirror(tmp_path / "mirrors").commit_info(str(repo), shas["compile_error"])
    assert info["author"] == "Gate Tests <gate-tests@example.invalid>"
    assert info["message"] == "wmma_gemm: variant compile_error"
    assert info["parent_sha"] == shas["base"]
    assert info["committed_at"].tzinfo is not None
    assert Mirror(tmp_path / "mirrors").commit_info(str(repo), shas["base"])["parent_sha"] is None


def test_a_commit_reachable_from_no_ref_is_fetched_by_sha(tmp_path, sample):
    repo, shas = sample
    mirror = Mirror(tmp_path / "mirrors")
    mirror.resolve(str(repo), "HEAD")
    subprocess.run(["git", "checkout", "-q", "--detach"], cwd=repo, check=True)
    detached = commit_files(repo, {"DETACHED.md": "x\n"}, "on a detached HEAD")
    assert mirror.resolve(str(repo), "HEAD") == detached
    mirror.checkout(str(repo), detached, tmp_path / "ws")
    assert (tmp_path / "ws" / "DETACHED.md").is_file()


def test_a_commit_the_mirror_holds_is_resolved_without_a_fetch(tmp_path, sample, monkeypatch):
    """A fetch per submission made planning cost ~0.5 s each (issue 12, item 6: the drain rate)."""
    import gate.sources.mirror as source

    repo, shas = sample
    mirror = Mirror(tmp_path / "mirrors")
    assert mirror.resolve(str(repo), "HEAD") == shas["base"]
    transfers = []
    real = source._transfer
    monkeypatch.setattr(source, "_transfer", lambda *a, **kw: transfers.append(a) or real(*a, **kw))
    assert mirror.resolve(str(repo), shas["base"]) == shas["base"]
    assert mirror.resolve(str(repo), "HEAD") == shas["base"]
    assert transfers == []
    new_sha = commit_files(repo, {"NEW.md": "x"}, "one more")     # a moved branch still fetches
    assert mirror.resolve(str(repo), "HEAD") == new_sha and len(transfers) == 1
