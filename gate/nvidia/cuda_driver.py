"""The CUDA driver and runtime libraries, loaded once, for the few calls torch does not wrap (torch's
handles pass as they are). None where a library cannot be loaded: callers then say what they could not
do rather than fail.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any


@functools.cache
def driver() -> Any | None:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


@functools.cache
def runtime() -> Any | None:
    """The CUDA runtime: the unversioned name first (a toolkit's), then the versions torch ships."""
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None
