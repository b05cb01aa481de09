"""Readable kernel names: instantiations told apart, namespaces and signatures gone. Nsight Compute's
demangled names and ptxas's mangled ones (read through c++filt) give one `match_key`, whatever each
tool does with a template's integral arguments."""

import pytest

from gate.nvidia.symbols import kernel_name, match_key, short_name

WGMMA = "_ZN9flashcore26flashcore_wgmma_fwd_kernelINS_3CfgILi128ELi1ELi128ELb0EEELb0EEEv11FlashParamsNS_7TmaMapsE"


def test_instantiations_keep_their_template_arguments():
    assert kernel_name(WGMMA) == "flashcore_wgmma_fwd_kernel<Cfg<128, 1, 128, false>, false>"
    other = WGMMA.replace("Li1ELi128", "Li2ELi128")
    assert kernel_name(other) == "flashcore_wgmma_fwd_kernel<Cfg<128, 2, 128, false>, false>"


def test_plain_and_nested_names():
    assert kernel_name("_ZN16wmma_gemm_sample16wmma_gemm_kernelE10GemmParams") == "wmma_gemm_kernel"
    assert kernel_name("_Z11bank_kernelPfii") == "bank_kernel"
    assert kernel_name("extern_c_kernel") == "extern_c_kernel"


def test_the_fallback_reads_the_last_itanium_name():
    assert short_name("_ZN16wmma_gemm_sample16wmma_gemm_kernelE10GemmParams") == "wmma_gemm_kernel"
    assert short_name("_Z11bank_kernelPfii") == "bank_kernel"
    assert short_name("plain") == "plain"

# Each pair: what Nsight Compute prints (its NameBase_DEMANGLED) and the mangled name ptxas prints.
SAME_KERNEL = [
    # from the recorded H200 report (tests/fixtures/ncu/h200-wmma-transpose-full.ncu-rep)
    ("void transpose_smem<(int)0>(const float *, float *, int)", "_Z14transpose_smemILi0EEvPKfPfi"),
    ("void k<(int)-4>(float *)", "_Z1kILin4EEvPf"),
    ("void k<(unsigned int)3>(float *)", "_Z1kILj3EEvPf"),                    # c++filt: k<3u>
    ("void k<(long)3, (unsigned long)4>(float *)", "_Z1kILl3ELm4EEvPf"),     # k<3l, 4ul>
    ("void k<(long long)3, (unsigned long long)4>(float *)", "_Z1kILx3ELy4EEvPf"),  # k<3ll, 4ull>
    ("void k<(short)3, (char)-2, (unsigned char)7>(float *)", "_Z1kILs3ELcn2ELh7EEvPf"),
    ("void k<(bool)1, (bool)0>(float *)", "_Z1kILb1ELb0EEvPf"),               # k<true, false>
]


@pytest.mark.parametrize(("demangled", "mangled"), SAME_KERNEL)
def test_a_cast_integral_argument_matches_the_demangled_literal(demangled, mangled):
    assert match_key(demangled) == match_key(mangled)


def test_other_arguments_stay_apart():
    assert match_key("void k<(int)4>(float *)") != match_key("_Z1kILi3EEvPf")
    assert match_key("void k<(bool)1>(float *)") != match_key("_Z1kILb0EEvPf")
    assert match_key("void k<(int)-4>(float *)") != match_key("_Z1kILi4EEvPf")


def test_names_that_merely_contain_digits_are_kept():
    assert match_key("void k<Vec3u, float4, (int)2>(int)") == "k<Vec3u,float4,2>"
    assert match_key("void k<(ns::E)3>(int)") == "k<(ns::E)3>"       # an enumeration keeps its type
    assert match_key("void k<(int)64>()") == "k<64>"                  # no parameters to strip


# Two instances of a CUTLASS 2-style `cutlass::Kernel<Gemm<...>>`, as nvcc 13.0 mangled them here
# (a small kernel of the same templates compiled with `nvcc -arch=sm_80 -Xptxas -v`).
CUTLASS_128 = ("_ZN7cutlass6KernelINS_4gemm6kernel4GemmINS1_11threadblock13MmaMultistageINS_9GemmShapeILi128ELi128E"
               "Li32EEENS_6half_tENS_6layout8RowMajorES8_NS9_11ColumnMajorELi3EEENS4_30GemmIdentityThreadblockSwizzleILi8"
               "EEELb0EEEEEvNT_6ParamsE")
CUTLASS_64 = ("_ZN7cutlass6KernelINS_4gemm6kernel4GemmINS1_11threadblock13MmaMultistageINS_9GemmShapeILi64ELi64ELi32EE"
              "ENS_6half_tENS_6layout8RowMajorES8_NS9_11ColumnMajorELi4EEENS4_30GemmIdentityThreadblockSwizzleILi8EEELb0"
              "EEEEEvNT_6ParamsE")


def test_cutlass_instances_are_told_apart_and_matched_by_their_template():
    from fnmatch import fnmatchcase

    from gate.nvidia.symbols import launch_name

    assert kernel_name(CUTLASS_128) == ("Kernel<Gemm<MmaMultistage<GemmShape<128, 128, 32>, half_t, RowMajor, half_t, "
                                        "ColumnMajor, 3>, GemmIdentityThreadblockSwizzle<8>, false> >")
    assert kernel_name(CUTLASS_64) != kernel_name(CUTLASS_128)
    # Nsight Compute's function name is `Kernel` for both: a launch is named from its mangled name
    assert launch_name("Kernel", CUTLASS_128) == kernel_name(CUTLASS_128)
    assert launch_name("Kernel", "", "void cutlass::Kernel<Op>(Op::Params)") == "Kernel<Op>"
    assert launch_name("Kernel") == "Kernel"
    # the manifest's `kernels` globs match the whole name, tile shape included
    pattern = "cutlass::Kernel<*GemmShape<128,128,32>*"
    assert fnmatchcase(match_key(CUTLASS_128), pattern) and not fnmatchcase(match_key(CUTLASS_64), pattern)


# kernel-builder's CUTLASS example (`cutlass::gemm::device::Gemm<float, RowMajor, ...>`, CUTLASS v3.6.0)
# as nvcc 13.0 names its one kernel for sm_90: libstdc++'s demangler and binutils' c++filt refuse it.
CUTLASS_SIMT_GEMM = ("_ZN7cutlass6KernelINS_4gemm6kernel4GemmINS1_11threadblock12MmaPipelinedINS1_9GemmShapeILi128ELi128EL"
              "i8EEENS_9transform11threadblock22PredicatedTileIteratorINS_11MatrixShapeILi128ELi8EEEfNS_6layout8Row"
              "MajorELi1ENS8_30PitchLinearStripminedThreadMapINS_16PitchLinearShapeILi8ELi128EEELi256ELi1EEELi1ELb0"
              "ENSD_9NoPermuteEEENS9_19RegularTileIteratorISC_fNSD_11ColumnMajorELi1ENS8_33TransposePitchLinearThre"
              "adMapSimtISI_EELi4EEENSA_INSB_ILi8ELi128EEEfSE_Li0ENSF_INSG_ILi128ELi8EEELi256ELi1EEELi1ELb0ESJ_EENS"
              "L_ISQ_fSE_Li0ESS_Li4EEEfSE_NS4_9MmaPolicyINS1_4warp7MmaSimtINS6_ILi32ELi64ELi8EEEfSM_fSE_fSE_NSW_13M"
              "maSimtPolicyINSB_ILi4ELi8EEENSD_19RowMajorInterleavedILi2EEENS6_ILi4ELi4ELi1EEEEELi1ELNS_16ComplexTr"
              "ansformE0ELS15_0EbEENSB_ILi4ELi0EEENSB_ILi0ELi0EEELi1EEENS_21NumericArrayConverterIffLi4ELNS_15Float"
              "RoundStyleE2ENS8_6thread14UnaryTransform8IdentityEEES1F_bEENS_8epilogue11threadblock8EpilogueIS7_S16"
              "_Li1ENS1I_22PredicatedTileIteratorINS1I_26OutputTileOptimalThreadMapINS1I_15OutputTileShapeILi128ELi"
              "1ELi4ELi4ELi1EEENS1M_ILi1ELi4ELi2ELi1ELi8EEELi256ELi1ELi32EEEfLb0ESJ_Lb0EEENS1H_4warp20FragmentItera"
              "torSimtISY_NS1_6thread3MmaINS6_ILi8ELi8ELi1EEEfSM_fSE_fSE_NS_4arch13OpMultiplyAddEbEESE_S14_EENS1R_1"
              "6TileIteratorSimtISY_S1Y_fSE_S14_EENS1I_18SharedLoadIteratorINS1P_18CompactedThreadMapEfLi4EEENS1H_6"
              "thread17LinearCombinationIfLi1EffLNS25_9ScaleType4KindE0ELS1B_2EfEENSB_ILi0ELi17EEELi1ELi1EEENS4_30G"
              "emmIdentityThreadblockSwizzleILi1EEELb0EEEEEvNT_6ParamsE")


def test_a_name_libstdcxx_cannot_demangle_is_read_by_the_itanium_grammar():
    pytest.importorskip("itanium_demangler")
    name = kernel_name(CUTLASS_SIMT_GEMM)
    assert name.startswith("Kernel<Gemm<MmaPipelined<GemmShape<128, 128, 8>, PredicatedTileIterator<MatrixShape<128, 8>, "
                           "float, RowMajor, 1,") and name.endswith("GemmIdentityThreadblockSwizzle<1>, false>>")
    assert match_key(CUTLASS_SIMT_GEMM).startswith("cutlass::Kernel<cutlass::gemm::kernel::Gemm<")
    assert "(int)" not in match_key(CUTLASS_SIMT_GEMM)
