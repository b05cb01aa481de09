from gate.nvidia.fingerprint import parse_smi_clocks


def test_parse_smi_clocks_reads_sm_and_memory_mhz():
    assert parse_smi_clocks("1980, 2619\n") == (1980, 2619)


def test_parse_smi_clocks_of_unsupported_field_is_none():
    assert parse_smi_clocks("[N/A], [N/A]") == (None, None)
    assert parse_smi_clocks("") == (None, None)
