"""Compiling a kernel's sources as the build does: the static and build stages, the object cache and
the job's compile pool, the compilers' command lines, torch's facts and precompiled headers.
Importable without torch; shared by the parent (the reuse key), `gate pch` and the GPU child
(docs/design.md, "The parts")."""
