"""Calling a kernel on inputs and judging what it returns: the workloads and the correctness stage.

    workloads.get_workload(kernel, src_dir) -> Workload      attention | gemm | module:callable; the
                                                             guarded, poisoned and perturbed buffers
    correctness.check(...) -> CorrectnessResult              every shape x dtype x seed against a
                                                             float32/float64 reference

The bench (`gate.timing`) and the profile target (`gate.profiling`) call kernels through the same
workloads; the bench's timed checks use the correctness stage's tolerances.
"""
