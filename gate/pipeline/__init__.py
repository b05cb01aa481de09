"""The gate's stages, one module each, typed in and out: what the GPU child runs. Only `run.py`
knows their order. Nothing here imports the runner, the executors, the database, the web or the
notifications (import-linter contracts in pyproject.toml).

The parent side of a job reads the manifest (`gate.manifest`) and decides (`gate.verdict`); nothing
here imports either verdict module (an import-linter contract).

Child side (`python -m gate.runner`, imports only gate.domain, gate.pipeline, torch, ncu_report):
    static.run_static(kernel, src_dir, out_dir, nvcc, cache_dir) -> StaticResult
                                                 ptxas -v + SASS histogram (sass.py) of the build's
                                                 own objects, compiled per manifest arch
    build.build_extension(kernel, src_dir, cache_dir, out_dir, nvcc=) -> BuildResult
                                                 one compile step for both: objects; object cache:
                                                 build_cache; compilers and their flags: toolchain;
                                                 torch's headers precompiled: torch_pch (made by the
                                                 parent, `gate pch`: torch_pch_make)
    build.load_module(path)                      each build under its own import name (pybind11 3
                                                 caches modules by name: two revisions would share one)
    workloads.get_workload(kernel, src_dir) -> Workload                attention | gemm | module:callable
    correctness.check(...) -> CorrectnessResult
    bench.time_revisions(...) -> BenchResult                           interleaved, L2 flushed (gpu_timing),
                                                                       each call held until enqueued (gpu_hold),
                                                                       graph or events (timing_methods), every
                                                                       stream's time (all_streams)
    build.registers_torch_ops(kernel, src_dir) -> bool                 then the baseline runs in a side host:
                                                                       side_host (its process), remote_side
                                                                       (the child's client, remote_protocol),
                                                                       side_wire (frames)
    stats                                                              pure: bootstrap, Mann-Whitney
    profile.profile(...) -> ProfileResult                              ncu in its own child (catalog:
                                                                       ncu_catalog; the report is read
                                                                       in a clean interpreter: ncu_isolated)
    ncu_report.read_report(path) -> list[KernelMetrics]                also `gate profile import`
    fingerprint.collect() -> Fingerprint
    run.measure(request: JobRequest, emit) -> JobResult                the order of the stages
"""
