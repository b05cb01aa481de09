"""Timing a kernel against its baseline and PyTorch's own: the bench stage, its timer, the checks
that keep its figures honest, the statistics, and the side host for a baseline that needs a process
of its own (docs/design.md, "The parts")."""
