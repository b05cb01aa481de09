"""Timing a kernel against its baseline and PyTorch's own, and keeping the figures honest.

    bench.time_revisions(...) -> BenchResult     the bench stage: interleaved rounds per shape x dtype
    gpu_timing.InterleavedTimer                  the timer: random order, L2 flushed, graphs or events
    gpu_hold                                     each call held until it is enqueued
    timing_methods, graph_topology               graph or events, and what a captured graph holds
    timed_checks                                 some timed calls checked in full
    all_streams                                  a call's time until every stream has finished
    pinned                                       the timer's references, pinned before a build loads
    stats                                        pure: bootstrap interval, Mann-Whitney
    side_host, remote_side, remote_protocol,     the baseline in a process of its own, when two builds
    side_wire                                    cannot share one (issue 26), and its frames

The clocks and the GPU's other users are watched beside the bench by `gate.nvidia.gpu_watch` and
`gate.nvidia.clock_lock`; the CUDA driver calls torch does not wrap are `gate.nvidia.cuda_driver`.
"""
