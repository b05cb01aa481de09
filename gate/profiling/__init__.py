"""Profiling a kernel under Nsight Compute (docs/design.md, "The parts"); ncu runs through `gate.nvidia`."""
