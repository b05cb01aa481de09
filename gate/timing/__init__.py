"""Timing a kernel against its baseline and PyTorch's own (docs/design.md, "The parts")."""
