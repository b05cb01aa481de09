"""A small in-process LRU for page data that is costly to build and changes only with new results.

Callers key an entry by everything it depends on, including the data version
(`uow.history.data_version`: the kernel's verdict count and newest id), so a verdict stored by any process
(an embedded executor, a remote worker) makes the old entry unreachable; it ages out of the LRU.
Builds run outside the lock: two requests may build the same entry once each, never block on it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class PageCache(Generic[T]):
    def __init__(self, max_entries: int = 16) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_build(self, key: Hashable, build: Callable[[], T]) -> T:
        """The entry under `key`, built (and kept) on a miss; an exception in `build` keeps nothing."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        value = build()
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)
