from gate.services.merge_base import find_merge_base, local_path
from tests.api.github_app_server import make_pr_repo


def test_merge_base_of_a_pr_in_a_local_repository_is_where_the_branch_forked(tmp_path):
    repo = make_pr_repo(tmp_path / "r")
    assert find_merge_base(repo.clone_url, repo.main_tip, repo.head) == repo.first


def test_unknown_commit_gives_none_so_the_base_tip_is_kept(tmp_path):
    repo = make_pr_repo(tmp_path / "r")
    assert find_merge_base(repo.clone_url, "e" * 40, repo.head) is None


def test_remote_without_a_mirror_gives_none():
    assert find_merge_base("https://github.com/octo/flashcore.git", "a" * 40, "b" * 40) is None


def test_local_path_understands_paths_and_file_urls_but_not_remotes(tmp_path):
    assert local_path(tmp_path.as_uri()) == tmp_path
    assert local_path(str(tmp_path)) == tmp_path
    assert local_path("git@github.com:octo/flashcore.git") is None
    assert local_path("https://github.com/octo/flashcore.git") is None
