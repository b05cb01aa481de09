from gate.compiling.static import parse_ptxas
from gate.compiling.toolchain import gencode, plain_nvcc_command
from gate.nvidia.sass import parse_sass

# CUDA 13.0 ptxas -v (NCU-FACTS.md §4): a kernel, a spilling kernel, and a device function block.
PTXAS_13 = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z11bank_kernelPfii' for 'sm_80'
ptxas info    : Function properties for _Z11bank_kernelPfii
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 17 registers, used 1 barriers, 4224 bytes smem, 368 bytes cmem[0]
ptxas info    : Function properties for _Z6helperf
    48 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z12spill_kernelPfi' for 'sm_80'
ptxas info    : Function properties for _Z12spill_kernelPfi
    272 bytes stack frame, 672 bytes spill stores, 588 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 272 bytes cumulative stack size, 364 bytes cmem[0]
ptxas info    : Compiling entry function '_Z11bank_kernelPfii' for 'sm_90a'
ptxas info    : Function properties for _Z11bank_kernelPfii
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 16 registers, used 1 barriers, 4224 bytes smem
"""

# CUDA 12.x prints no "used N barriers" field.
PTXAS_12 = """\
ptxas info    : Compiling entry function '_Z4attnv' for 'sm_89'
ptxas info    : Function properties for _Z4attnv
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 43 registers, 768 bytes smem, 400 bytes cmem[0]
"""


def by_key(functions):
    return {(f.function, f.arch): f for f in functions}


def test_parse_ptxas_reads_every_field_per_function_and_arch():
    found = by_key(parse_ptxas(PTXAS_13))
    assert set(found) == {("_Z11bank_kernelPfii", "sm_80"), ("_Z12spill_kernelPfi", "sm_80"),
                          ("_Z11bank_kernelPfii", "sm_90a")}
    bank = found["_Z11bank_kernelPfii", "sm_80"]
    assert (bank.registers, bank.smem_bytes, bank.stack_bytes, bank.spill_bytes) == (17, 4224, 0, 0)
    spill = found["_Z12spill_kernelPfi", "sm_80"]
    assert (spill.registers, spill.stack_bytes, spill.spill_store_bytes, spill.spill_load_bytes) == (32, 272, 672, 588)
    assert spill.smem_bytes == 0
    assert found["_Z11bank_kernelPfii", "sm_90a"].registers == 16


def test_parse_ptxas_does_not_charge_a_device_function_stack_to_the_kernel_before_it():
    assert by_key(parse_ptxas(PTXAS_13))["_Z11bank_kernelPfii", "sm_80"].stack_bytes == 0


def test_parse_ptxas_reads_cuda_12_lines_without_barriers():
    (attn,) = parse_ptxas(PTXAS_12)
    assert (attn.arch, attn.registers, attn.smem_bytes, attn.spill_bytes) == ("sm_89", 43, 768, 8)


def test_gencode_uses_the_arch_specific_virtual_arch_for_sm_90a():
    assert gencode("sm_90a") == "-gencode=arch=compute_90a,code=sm_90a"
    assert gencode("sm_80") == "-gencode=arch=compute_80,code=sm_80"


def test_the_plain_nvcc_command_is_the_builds_with_ptxas_verbose_and_one_gencode_per_arch():
    cmd = plain_nvcc_command("/cuda/bin/nvcc", ["sm_90a"])
    assert cmd[0] == "/cuda/bin/nvcc"
    assert ["-Xptxas", "-v"] == cmd[cmd.index("-Xptxas"):cmd.index("-Xptxas") + 2]
    assert "-lineinfo" in cmd and "-O3" in cmd and "-I." in cmd
    assert [a for a in cmd if a.startswith("-gencode")] == ["-gencode=arch=compute_90a,code=sm_90a"]


CUOBJDUMP = """
\tcode for sm_90a
\t\tFunction : _ZN16wmma_gemm_sample16wmma_gemm_kernelE10GemmParams
\t.headerflags\t@"EF_CUDA_ACCELERATORS EF_CUDA_SM90"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                          /* 0x00000a00ff017b82 */
                                                                                   /* 0x000ff00000000800 */
        /*0010*/                   HMMA.16816.F32 R4, R8, R12, R4 ;                 /* 0x0000000c0804723c */
        /*0020*/              @!P0 BRA 0x100 ;                                      /* 0x0000000000008947 */
        /*0030*/               @P1 LDSM.16.M88.4 R8, [R2] ;
        /*0040*/                   HMMA.16816.F32 R16, R8, R14, R16 ;
        /*0050*/             @!UPT UIADD3 UR4, UR4, 0x1, URZ ;
\t\tFunction : _Z5otherv
        /*0000*/                   EXIT ;
"""

NVDISASM = """
.text._Z5otherv:
        /*0000*/                   STL.64 [R1], R2 ;
        /*0010*/                   LDL.LU R4, [R1] ;
        /*0020*/                   EXIT ;
"""


def test_parse_sass_counts_base_opcodes_per_function_with_predicates():
    hist = parse_sass(CUOBJDUMP)
    assert hist["_ZN16wmma_gemm_sample16wmma_gemm_kernelE10GemmParams"] == {
        "LDC": 1, "HMMA": 2, "BRA": 1, "LDSM": 1, "UIADD3": 1}
    assert hist["_Z5otherv"] == {"EXIT": 1}


def test_parse_sass_reads_nvdisasm_sections():
    assert parse_sass(NVDISASM) == {"_Z5otherv": {"STL": 1, "LDL": 1, "EXIT": 1}}


def test_a_header_missing_inside_torchs_tree_is_the_installs_gap_not_the_kernels():
    from gate.compiling.static import _missing_under_torch

    torch_gap = ("In file included from csrc/k.cu:7:\n"
                 "/site/torch/include/c10/cuda/CUDAMacros.h:9:10: fatal error: "
                 "c10/cuda/impl/cuda_cmake_macros.h: No such file or directory\n")
    # ATen's CUDAContextLight.h includes a CUDA library's header that a minimal toolkit lacks: named as such
    library_gap = ("/site/torch/include/ATen/cuda/CUDAContextLight.h:7:10: fatal error: cusparse.h: "
                   "No such file or directory\n")
    kernel_error = "csrc/k.cu:3:10: fatal error: mine.h: No such file or directory\n"
    assert _missing_under_torch(torch_gap, ("/site/torch/include",)) == "c10/cuda/impl/cuda_cmake_macros.h"
    assert _missing_under_torch(library_gap, ("/site/torch/include",)) == "cusparse.h"
    assert _missing_under_torch(kernel_error, ("/site/torch/include",)) == ""
    assert _missing_under_torch(torch_gap, ("/elsewhere/include",)) == ""
