"""Reading a report in a child interpreter gives what reading it in-process gives, faults included."""

import pytest

from gate.errors import ProfilerError
from gate.nvidia.ncu_report import read_launches
from gate.profiling.ncu_isolated import ReportReader


def test_child_reader_returns_the_same_launches_as_in_process(ncu_fixture):
    path = ncu_fixture("h200-wmma-transpose-full.ncu-rep")
    launches = ReportReader().read(path)
    assert launches == read_launches(path)
    assert launches[1].mangled == "_Z14transpose_smemILi0EEvPKfPfi"    # the static scope matches by it


def test_child_reader_turns_a_garbage_file_into_profiler_error_naming_it(tmp_path):
    junk = tmp_path / "junk.ncu-rep"
    junk.write_text("not a report")
    with pytest.raises(ProfilerError, match="junk.ncu-rep"):
        ReportReader().read(junk)
