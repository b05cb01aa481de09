"""Compiling a kernel's sources as the build does, importable without torch (docs/design.md, "The parts")."""
