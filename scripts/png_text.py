"""Text metadata in a PNG file: tEXt chunks written and read with zlib and struct alone (no imaging
library), as the PNG specification lays them out (W3C PNG, 3rd edition, 11.3.3.2 tEXt):
length (4 bytes, big-endian), type `tEXt`, `keyword NUL text` in Latin-1, CRC-32 of type and data.

scripts/screenshots.py records in each README screenshot the gate commit and the GPU it shows;
tests/packaging/test_screenshots.py reads them back.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG file (no PNG signature)")
    chunks, at = [], len(SIGNATURE)
    while at < len(data):
        if at + 8 > len(data):
            raise ValueError(f"truncated PNG: a chunk header at byte {at} is cut")
        (length,), kind = struct.unpack(">I", data[at:at + 4]), data[at + 4:at + 8]
        body = data[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        if zlib.crc32(kind + body) != crc:
            raise ValueError(f"corrupt PNG: the CRC of the {kind.decode('latin-1')} chunk at byte {at} is wrong")
        chunks.append((kind, body))
        at += 12 + length
    if not chunks or chunks[0][0] != b"IHDR" or chunks[-1][0] != b"IEND":
        raise ValueError("not a whole PNG file (IHDR first and IEND last)")
    return chunks


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def read_text(path: Path) -> dict[str, str]:
    """Every tEXt keyword of the PNG at `path` and its text."""
    texts = {}
    for kind, body in _chunks(Path(path).read_bytes()):
        if kind == b"tEXt":
            keyword, _, text = body.partition(b"\0")
            texts[keyword.decode("latin-1")] = text.decode("latin-1")
    return texts


def write_text(path: Path, texts: dict[str, str]) -> None:
    """Put `texts` into the PNG at `path` as tEXt chunks after its header, replacing the same keywords."""
    for keyword, text in texts.items():
        if not 1 <= len(keyword) <= 79 or "\0" in keyword or "\0" in text:
            raise ValueError(f"PNG text keyword {keyword!r}: 1 to 79 characters, and no NUL in it or its text")
        try:
            keyword.encode("latin-1"), text.encode("latin-1")
        except UnicodeEncodeError as exc:
            raise ValueError(f"PNG text {keyword!r}: tEXt holds Latin-1 only ({exc.reason})") from exc
    chunks = [(kind, body) for kind, body in _chunks(Path(path).read_bytes())
              if not (kind == b"tEXt" and body.partition(b"\0")[0].decode("latin-1") in texts)]
    added = [(b"tEXt", f"{k}\0{v}".encode("latin-1")) for k, v in texts.items()]
    out = SIGNATURE + b"".join(_chunk(kind, body) for kind, body in [chunks[0], *added, *chunks[1:]])
    Path(path).write_bytes(out)
