"""Hold the GPU until a timed call is fully enqueued, so its events bracket GPU work only (issue 25).

With only the L2 flush to keep the GPU busy, a host that fell behind let the start event run on an
idle GPU, and the interval read the host's enqueue time (docs/threat-model.md, "host time inside a
timed interval", says how the hold works and what it fixed). A call that waits for the GPU while
enqueued (a `.item()`) would deadlock on the hold: it gives up after `TIMEOUT_NS` (`timed_out()`).
"""

from __future__ import annotations

import ctypes
from typing import Any

from gate.nvidia.cuda_driver import driver

# Long enough for any host to enqueue one call; short enough that a call which waits for the GPU
# while enqueued costs a batch tens of milliseconds before the side is timed without the hold.
TIMEOUT_NS = 20_000_000

KERNEL = "gate_hold"
PTX = b"""
.version 7.0
.target sm_80
.address_size 64

.visible .entry gate_hold(
    .param .u64 p_flag,
    .param .u32 p_ticket,
    .param .u64 p_timeout_ns,
    .param .u64 p_timed_out
)
{
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [p_flag];
    ld.param.u32 %r1, [p_ticket];
    ld.param.u64 %rd2, [p_timeout_ns];
    ld.param.u64 %rd3, [p_timed_out];
    mov.u64 %rd4, %globaltimer;
WAIT:
    ld.volatile.global.u32 %r2, [%rd1];
    sub.s32 %r3, %r2, %r1;
    setp.ge.s32 %p1, %r3, 0;
    @%p1 bra DONE;
    mov.u64 %rd5, %globaltimer;
    sub.u64 %rd6, %rd5, %rd4;
    setp.lt.u64 %p2, %rd6, %rd2;
    @%p2 bra WAIT;
    st.volatile.global.u32 [%rd3], %r1;
DONE:
    ret;
}
\x00"""


class Hold:
    """One per timer: `hold()` enqueues a hold on the current stream and returns its ticket;
    `release(ticket)` lets the GPU pass it. Tickets grow by one; the hold passes once the released
    word has reached its ticket (compared modulo 2^32), so an early release is never lost."""

    def __init__(self, lib: Any, function: Any, words: Any, device_words: int, current_stream: Any):
        self._lib, self._function, self._words = lib, function, words   # `words`: keeps the pinned memory alive
        self._released = ctypes.c_uint32.from_address(words.data_ptr())
        self._timed_out = ctypes.c_uint32.from_address(words.data_ptr() + 4)
        self._current_stream = current_stream
        # Arguments made once (cuLaunchKernel copies their values at each launch): the ticket is set in
        # place, so no ctypes objects are made on the path every timed repetition takes.
        self._ticket = ctypes.c_uint32(0)
        self._args = (ctypes.c_uint64(device_words), self._ticket, ctypes.c_uint64(TIMEOUT_NS),
                      ctypes.c_uint64(device_words + 4))
        self._params = (ctypes.c_void_p * len(self._args))(
            *(ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in self._args))

    @classmethod
    def create(cls) -> tuple[Hold | None, str]:
        """(a hold, '') or (None, why not): the driver, the module or pinned memory unavailable."""
        import torch

        lib = driver()
        if lib is None:
            return None, "libcuda not loadable"
        torch.empty(1, device="cuda")    # the device's primary context, current on this thread
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        rc = lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(PTX))
        if rc == 0:
            rc = lib.cuModuleGetFunction(ctypes.byref(function), module, KERNEL.encode())
        if rc != 0:
            return None, f"the hold kernel did not load (CUresult {rc})"
        words = torch.zeros(2, dtype=torch.int32, pin_memory=True)
        # Under unified addressing pinned memory is mapped at its host address; ask the driver anyway.
        device = ctypes.c_uint64(0)
        rc = lib.cuMemHostGetDevicePointer_v2(ctypes.byref(device), ctypes.c_void_p(words.data_ptr()), 0)
        if rc != 0:
            return None, f"pinned memory not mapped to the device (CUresult {rc})"
        return cls(lib, function, words, device.value, torch.cuda.current_stream), ""

    def hold(self) -> int:
        self._ticket.value = (self._ticket.value + 1) & 0xFFFFFFFF or 1     # 0 means "not held" to callers
        stream = ctypes.c_void_p(self._current_stream().cuda_stream)
        rc = self._lib.cuLaunchKernel(self._function, 1, 1, 1, 1, 1, 1, 0, stream, self._params, None)
        if rc != 0:
            raise RuntimeError(f"the hold kernel did not launch (CUresult {rc})")
        return self._ticket.value

    def release(self, ticket: int) -> None:
        self._released.value = ticket

    def timed_out(self) -> int:
        """The last ticket whose hold gave up waiting (0: none); reading it clears it. Read after
        the GPU has passed the holds in question (after the batch's synchronisation)."""
        ticket = self._timed_out.value
        self._timed_out.value = 0
        return ticket
