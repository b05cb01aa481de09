"""Server paths kept out of what the gate shows: an error stored with a job or a revision is read by
anyone who can read the API, and the data folder's absolute path says where the server keeps its
database and its mirrors of private repositories (issue 24)."""

from __future__ import annotations

from pathlib import Path

DATA = "<data>"


def hide(text: str, data_dir: str | Path) -> str:
    """`text` with the data folder's absolute path (as given, and resolved) written `<data>`."""
    for folder in dict.fromkeys((str(data_dir), str(Path(data_dir).resolve()))):
        if folder.startswith("/") and len(folder) > 1:
            text = text.replace(folder, DATA)
    return text
