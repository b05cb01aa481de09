"""Calling a kernel on inputs and judging what it returns: the workloads and the correctness stage."""
