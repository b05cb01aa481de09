"""The CUDA driver library (libcuda), loaded once, for the few driver calls torch does not wrap.

The driver's objects (contexts, streams, graphs) are the runtime's, so torch's handles can be passed
to it as they are. None where the driver cannot be loaded (a machine without one): callers then say
what they could not do rather than fail.
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
