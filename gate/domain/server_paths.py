"""Server paths kept out of what the gate shows: an error stored with a job or a revision is read by
anyone who can read the API, and the data folder's absolute path says where the server keeps its
database and its mirrors of private repositories (issue 24)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

DATA = "<data>"


def _folders(data_dir: str | Path) -> list[str]:
    """The data folder as given and resolved, absolute ones only, longest first."""
    found = {str(data_dir), str(Path(data_dir).resolve())}
    return sorted((f for f in found if f.startswith("/") and len(f) > 1), key=len, reverse=True)


def hide(text: str, data_dir: str | Path) -> str:
    """`text` with the data folder's absolute path (as given, and resolved) written `<data>`."""
    for folder in _folders(data_dir):
        text = text.replace(folder, DATA)
    return text


def hide_in_chunks(chunks: Iterable[bytes], data_dir: str | Path) -> Iterator[bytes]:
    """`hide` over a stream of bytes (a log served in pieces): the last bytes of each piece wait
    for the next one, so a path cut in two by a piece boundary is still found."""
    folders = [(f.encode(), DATA.encode()) for f in _folders(data_dir)]
    if not folders:
        yield from chunks
        return
    keep = max(len(f) for f, _ in folders) - 1
    carry = b""
    for chunk in chunks:
        text = carry + chunk
        for folder, shown in folders:
            text = text.replace(folder, shown)
        cut = max(len(text) - keep, 0)
        if cut:
            yield text[:cut]
        carry = text[cut:]
    if carry:
        yield carry
