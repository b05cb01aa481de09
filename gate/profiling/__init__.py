"""Profiling a kernel under Nsight Compute, each side in an ncu process of its own.

    profile.profile(...) -> ProfileResult        the profile stage: the session's run, its report read
    profile_session.ProfileSession               ncu on the profile target, started ahead, told to go
    profile_target                               the program ncu profiles (`python -m
                                                 gate.profiling.profile_target`): one call per shape
    ncu_isolated                                 the report read in a clean interpreter

The ncu command line and its process are `gate.nvidia.ncu`; the report's metrics and the per-line
counters are `gate.nvidia.ncu_report`, `ncu_catalog` and `source_counters`.
"""
