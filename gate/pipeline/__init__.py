"""The order of the GPU child's stages: only `run.py` knows it.

    run.measure(request: JobRequest, emit) -> JobResult
        static (both sides, side by side) -> with a GPU: build -> correctness -> bench -> profile
        -> fingerprint
    ahead.Ahead                        the GPU stages' head start during the static stages

Each stage lives in the package of its subsystem; nothing there imports this package:

    gate.compiling   static, build (objects, object cache, compile pool, toolchain, torch's headers)
    gate.checking    correctness (workloads)
    gate.timing      bench (timer, timed checks, methods, stats, the side host)
    gate.profiling   profile (session, target, report reader)
    gate.nvidia      NVIDIA's facts and tools: compiler, disassembler, ncu, GPU list and watch,
                     clock lock, fingerprint

The child's entry point is `gate.runner`; the parent side of a job (`gate.executors`) decides with
`gate.verdict`, which nothing here imports (import-linter contracts in pyproject.toml).
"""
