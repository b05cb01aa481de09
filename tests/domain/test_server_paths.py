"""Errors shown through the API name the data folder `<data>`, never its absolute path (issue 24)."""

from __future__ import annotations

from gate.domain.server_paths import hide, hide_in_chunks


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


def test_a_stream_cut_anywhere_still_hides_the_folder(tmp_path):
    text = f"nvcc -c {tmp_path}/workspaces/j1/attn.cu\nld {tmp_path}/x.o\n".encode() * 3
    for size in (1, 2, 7, len(str(tmp_path)) - 1, len(str(tmp_path)), 64, len(text)):
        pieces = [text[i:i + size] for i in range(0, len(text), size)]
        assert b"".join(hide_in_chunks(pieces, tmp_path)) == hide(text.decode(), tmp_path).encode(), size
