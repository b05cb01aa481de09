"""`gate demo`'s replay reports a commit it could not plan with the planning error, not a verdict."""

import io

from gate.config import Settings
from gate.demo.flashcore_commits import Step
from gate.demo.replay import replay


def _readme_only(_src, repo):  # noqa: ANN001
    (repo / "README").write_text("no manifest here\n")


def test_a_commit_without_a_manifest_is_an_error_naming_why(tmp_path):
    settings = Settings(data_dir=str(tmp_path), database_url=f"sqlite:///{tmp_path}/demo.db")
    out = io.StringIO()
    (row,) = replay(settings, out, steps=(Step("README only", _readme_only, {}),))
    ((kernel, verdict, reason),) = row.verdicts
    assert (kernel, verdict) == ("-", "error")
    assert "no gate.toml" in reason and reason in out.getvalue()
