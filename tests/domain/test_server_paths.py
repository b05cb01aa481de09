"""Errors shown through the API name the data folder `<data>`, never its absolute path (issue 24)."""

from __future__ import annotations

from gate.domain.server_paths import hide


def test_the_data_folder_is_hidden_as_given_and_resolved(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    text = f"fatal: '{real}/mirrors/ab.git' does not appear to be a git repository; cwd {link}/workspaces/x"
    shown = hide(text, link)
    assert str(tmp_path) not in shown
    assert shown == "fatal: '<data>/mirrors/ab.git' does not appear to be a git repository; cwd <data>/workspaces/x"


def test_text_without_the_folder_is_unchanged_and_a_relative_folder_is_resolved(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert hide("revision 'nope' does not exist in https://github.com/acme/k", ".gate") == \
        "revision 'nope' does not exist in https://github.com/acme/k"
    assert hide(f"{tmp_path}/.gate/x", ".gate") == "<data>/x"
