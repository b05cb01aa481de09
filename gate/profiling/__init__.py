"""Profiling a kernel under Nsight Compute: the profile stage, its ncu session started ahead, the
program ncu launches, and the report read in a clean interpreter. ncu itself runs through
`gate.nvidia.ncu_cli`."""
