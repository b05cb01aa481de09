from gate.nvidia.fingerprint import parse_ncu_version, parse_smi_clocks


def test_parse_ncu_version_reads_the_version_line():
    text = "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\n" \
           "Version 2025.3.1.0 (build 36398880) (public-release)"
    assert parse_ncu_version(text) == "2025.3.1.0"


def test_parse_ncu_version_of_nothing_is_empty():
    assert parse_ncu_version("") == ""


def test_parse_smi_clocks_reads_sm_and_memory_mhz():
    assert parse_smi_clocks("1980, 2619\n") == (1980, 2619)


def test_parse_smi_clocks_of_unsupported_field_is_none():
    assert parse_smi_clocks("[N/A], [N/A]") == (None, None)
    assert parse_smi_clocks("") == (None, None)
