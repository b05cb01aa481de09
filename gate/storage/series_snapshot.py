"""Held histories kept on disk, so a restarted server does not read every trace from the start again.

At 100,000 revisions a kernel page's 47 traces are 4.7 million metric rows: ~20 s to read on SQLite,
far over the 1 s a page may take cold, and no query shape brings that under a second (the rows must
reach Python once). A held history only ever grows and `SeriesCache` brings an old one up to date,
so a saved one is as good as one kept in memory: a new process loads it (~0.1 s) and refreshes it.

One file per (database, kernel, GPU kind), written to a temporary name and renamed (a reader sees a
complete file or none). An unreadable file is ignored, and so is one whose witness (the oldest and
newest verdict rows' ids and times) the database does not hold: a database made again at the same
address (a demo replayed into a fresh file) holds the same counts and ids. Environment keys are
stored as codes into their few distinct strings: a file holds numbers, not millions of references.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)
FORMAT = 2          # bump when `HeldHistory` changes shape: older files are then ignored


class SeriesSnapshots:
    """Where the held histories of one database are kept between runs."""

    def __init__(self, directory: Path, database: str) -> None:
        self.directory = Path(directory) / _digest(database, 16)

    def load(self, kernel: str, gpu_kind: str, holds: Callable[[Any], bool]) -> Any | None:
        """The history saved for (kernel, GPU kind), or None when there is none usable: none saved,
        unreadable, or one whose witness `holds` says this database does not hold."""
        path = self._path(kernel, gpu_kind)
        try:
            with path.open("rb") as f:
                witness, held = pickle.load(f)   # noqa: S301 (the server's own file, in its data dir)
            if not holds(witness):
                log.info("series snapshot %s is of another database; reading the history", path)
                return None
            return replace(held, traces={t: _unpacked(s) for t, s in held.traces.items()})
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001 (damaged or of another format: read the database instead)
            log.warning("series snapshot %s unreadable; reading the history", path, exc_info=True)
            return None

    def save_later(self, kernel: str, gpu_kind: str, held: Any, witness: Any) -> threading.Thread:
        """Write `held` and the `witness` of its database in a background thread (returned): a request
        never waits for the write. `held`'s arrays are never changed in place (`series_cache.py`), so it
        may be written in use."""
        thread = threading.Thread(target=self.save, args=(kernel, gpu_kind, held, witness), name="series-snapshot",
                                  daemon=True)
        thread.start()
        return thread

    def save(self, kernel: str, gpu_kind: str, held: Any, witness: Any) -> None:
        path = self._path(kernel, gpu_kind)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            packed = replace(held, traces={t: _packed(s) for t, s in held.traces.items()})
            with tmp.open("wb") as f:
                pickle.dump((witness, packed), f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except Exception:  # noqa: BLE001 (an optimization: the history stays held in memory)
            log.warning("series snapshot %s not written", path, exc_info=True)
            tmp.unlink(missing_ok=True)

    def _path(self, kernel: str, gpu_kind: str) -> Path:
        return self.directory / f"{_digest(kernel + chr(0) + gpu_kind, 24)}.v{FORMAT}.pickle"


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _packed(series: Any) -> Any:
    code: dict[str, int] = {}
    codes = [code.setdefault(e, len(code)) for e in series.environments.tolist()]
    return replace(series, environments=(list(code), np.array(codes, dtype=np.int32)))


def _unpacked(series: Any) -> Any:
    keys, codes = series.environments
    return replace(series, environments=np.array(keys, dtype=object)[codes])
