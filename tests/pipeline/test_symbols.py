"""Readable kernel names: instantiations told apart, namespaces and signatures gone."""

from gate.nvidia.symbols import kernel_name, short_name

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
