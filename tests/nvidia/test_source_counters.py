"""SourceCounters from a real report (the H200 fixture, built without -lineinfo) and the folding
of instructions into source lines (synthetic records, as a -lineinfo build gives them)."""

from pathlib import Path

from gate.domain.codec import from_json, to_json
from gate.domain.results import ProfileResult, StageStatus
from gate.nvidia.ncu_report import read_launches
from gate.nvidia.source_counters import RawInstruction, shown_file, source_profile


def test_fixture_instructions_carry_every_counter(ncu_fixture):
    _, unpadded, padded = read_launches(ncu_fixture("h200-wmma-transpose-full.ncu-rep"))
    assert len(unpadded.instructions) == 50
    lds = [r for r in unpadded.instructions if r.sass.startswith("LDS")]
    # the 32x32 tile read down a column: 4 LDS per thread, each ~31 excess wavefronts per request
    assert [r.values["smem_excess_wavefronts"] for r in lds] == [4_063_232.0] * 4
    assert sum(r.values.get("smem_excess_wavefronts", 0.0) for r in padded.instructions) == 0.0
    assert sum(r.values.get("stall_samples", 0.0) for r in unpadded.instructions) == 10_174
    assert all(r.file == "" and r.line == 0 for r in unpadded.instructions)   # built without -lineinfo


def test_fixture_profile_uses_offsets_and_keeps_instructions_without_line_info(ncu_fixture):
    _, unpadded, _ = read_launches(ncu_fixture("h200-wmma-transpose-full.ncu-rep"))
    profile = source_profile("transpose_smem", "", "", unpadded.instructions, None)
    assert not profile.line_info and len(profile.instructions) == 50
    assert profile.instructions[0].offset == 0
    assert profile.totals.inst_executed == 6_422_528
    branch = next(i for i in profile.instructions if i.opcode == "BRA")
    assert "+0x" in branch.sass and "0x7f" not in branch.sass     # no absolute address kept
    assert profile.lines[0].file == "" and profile.lines[0].line == 0


def records() -> list[RawInstruction]:
    return [
        RawInstruction(0x1000, "S2R R0, SR_TID.X", "k.cu", 3, {"inst_executed": 4.0, "stall_samples": 1.0}),
        RawInstruction(0x1010, "LDS R1, [R0]", "k.cu", 5, {"inst_executed": 4.0, "stall_samples": 6.0,
                                                            "smem_excess_wavefronts": 60.0}),
        RawInstruction(0x1020, "LDS R2, [R0+0x4]", "k.cu", 5, {"inst_executed": 4.0, "stall_samples": 2.0}),
        RawInstruction(0x1030, "MOV R3, R2", "/usr/local/cuda/include/cuda_fp16.hpp", 700,
                       {"inst_executed": 4.0}),
    ]


def test_instructions_fold_into_lines_with_the_checkouts_text(tmp_path):
    (tmp_path / "k.cu").write_text("// k\n__global__ void k() {\n  int t = threadIdx.x;\n\n"
                                   "  float v = tile[t][0] + tile[t][1];\n}\n")
    profile = source_profile("k", "64", "fp16", records(), tmp_path)
    assert profile.line_info
    by_line = {(ln.file, ln.line): ln for ln in profile.lines}
    five = by_line[("k.cu", 5)]
    assert five.text == "float v = tile[t][0] + tile[t][1];"
    assert (five.counters.inst_executed, five.counters.stall_samples,
            five.counters.smem_excess_wavefronts) == (8.0, 8.0, 60.0)
    header = by_line[("cuda_fp16.hpp", 700)]      # outside the checkout: base name, no text
    assert header.text == ""
    assert profile.totals.stall_samples == 9.0


def test_shown_file_never_leaves_the_checkout(tmp_path):
    (tmp_path / "a.cu").write_text("x\n")
    outside = tmp_path.parent / "secret.cu"
    assert shown_file("a.cu", tmp_path) == ("a.cu", (tmp_path / "a.cu").resolve())
    assert shown_file(str(tmp_path / "a.cu"), tmp_path)[0] == "a.cu"
    assert shown_file("../secret.cu", tmp_path) == ("secret.cu", None)
    assert shown_file(str(outside), tmp_path) == ("secret.cu", None)
    assert shown_file("/usr/include/x.h", None) == ("x.h", None)


def test_a_cached_objects_line_table_maps_into_this_checkout(tmp_path):
    """nvcc recorded an earlier job's checkout (deleted since); the same file is found here by the
    longest tail of its path, while a different file that exists elsewhere (a toolkit header) stays
    outside."""
    checkout = tmp_path / "candidate"
    (checkout / "kernels").mkdir(parents=True)
    (checkout / "kernels" / "k.cu").write_text("x\n")
    (checkout / "k.cu").write_text("a different file at the root\n")
    gone = "/data/workspaces/0123abcd-wmma/candidate/kernels/k.cu"
    assert shown_file(gone, checkout) == ("kernels/k.cu", (checkout / "kernels" / "k.cu").resolve())
    toolkit = tmp_path / "cuda" / "include"
    toolkit.mkdir(parents=True)
    (toolkit / "k.cu").write_text("header\n")
    assert shown_file(str(toolkit / "k.cu"), checkout) == ("k.cu", None)
    # the other side's checkout of the same job, still there, compiled the identical file
    other = tmp_path / "baseline" / "kernels"
    other.mkdir(parents=True)
    (other / "k.cu").write_text("x\n")
    assert shown_file(str(other / "k.cu"), checkout)[0] == "kernels/k.cu"
    assert shown_file("/gone/elsewhere/nothing.h", checkout) == ("nothing.h", None)


def test_the_source_profile_survives_the_json_round_trip(tmp_path):
    result = ProfileResult(StageStatus.PASSED, source=[source_profile("k", "", "", records(), None)])
    assert from_json(ProfileResult, to_json(result)) == result


def test_old_profile_results_without_source_still_load():
    data = to_json(ProfileResult(StageStatus.PASSED))
    del data["source"]
    assert from_json(ProfileResult, data).source == []



def test_a_line_that_ends_a_multi_line_statement_reads_with_the_statement_s_first_line():
    from gate.nvidia.source_counters import line_text

    source = ['__device__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {',
              '  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\\n"',
              '               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])',
              '               : "r"(addr));',
              '}',
              '// a comment',
              'int x = 1;']
    assert line_text(source, 4) == ('asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\\n"'
                                    ' … : "r"(addr));')
    assert line_text(source, 2) == source[1].strip()        # a statement's own first line reads as itself
    assert line_text(source, 7) == "int x = 1;"              # after a comment: a new statement
    assert line_text(source, 1) == source[0]
