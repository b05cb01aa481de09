"""Compiling a kernel's sources as the gate's build does, shared by the parent and the GPU child.

    static.run_static(...) -> StaticResult        the static stage: every `.cu` per manifest arch,
                                                  ptxas -v figures and SASS of the very objects
    build.build_extension(...) -> BuildResult     the build stage: the extension `.so`, linked from
                                                  those objects; `build.load_module`, `prefetch`
    objects.compile_object                        one source into one cached object (both stages)
    build_cache                                   the object cache and its key (`local_includes`:
                                                  the parent's reuse key follows includes the same way)
    compile_pool                                  one pool per job: each object compiled once
    toolchain                                     the compilers' command lines, torch's flags in them
    torch_facts, torch_pch, torch_pch_make        what torch tells a compile, kept on disk, and its
                                                  precompiled headers (made by `gate pch`)

Importable without torch (tests/compiling/test_torch_facts.py): torch is imported inside the
functions that need it. NVIDIA's compiler and disassembler run behind `gate.nvidia.compiler` and
`gate.nvidia.sass`; nothing here runs a kernel (`gate.checking`, `gate.timing`, `gate.profiling` do).
"""
