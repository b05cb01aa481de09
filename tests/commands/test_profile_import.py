"""`gate profile import` on the recorded H200 reports (the acceptance figures of the fixtures README)."""

import json

from gate.cli import main


def _import_json(capsys, path) -> list[dict]:
    assert main(["profile", "import", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["kernels"]


def test_import_json_gives_transpose_conflict_rates(capsys, ncu_fixture):
    wmma, unpadded, padded = _import_json(capsys, ncu_fixture("h200-wmma-transpose-full.ncu-rep"))
    assert wmma["kernel"] == "wmma_abt" and wmma["ld_bank_conflict_pct"] == 0.0
    assert unpadded["kernel"] == "transpose_smem<0>" and unpadded["ld_bank_conflict_pct"] > 90
    assert padded["kernel"] == "transpose_smem<1>" and padded["ld_bank_conflict_pct"] < 10


def test_import_json_gives_gmma_activity_for_the_cudnn_kernel_only(capsys, ncu_fixture):
    kernels = _import_json(capsys, ncu_fixture("h200-sdpa-gate-metrics.ncu-rep"))
    with_gmma = [k["kernel"] for k in kernels if k["gmma_inst_pct"] and k["gmma_inst_pct"] > 0]
    assert len(kernels) == 4
    assert len(with_gmma) == 1 and with_gmma[0].startswith("cudnn_generated_fort_native_sdpa_sm90")


def test_import_table_has_a_row_per_kernel_and_lists_na_metrics(capsys, ncu_fixture):
    assert main(["profile", "import", str(ncu_fixture("h200-sdpa-gate-metrics.ncu-rep"))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "ld conf %" in lines[0] and "gmma %" in lines[0]
    assert lines[1].split()[1].startswith("flash_fwd_splitkv_kernel<") and lines[4].split()[1] == "wmma_abt2"
    assert "n/a" in lines[1]
    assert any("n/a in this report: smsp__sass_inst_executed_op_shared_ld.sum" in ln for ln in lines[5:])


def test_import_of_a_garbage_file_exits_2_naming_it(capsys, tmp_path):
    junk = tmp_path / "junk.ncu-rep"
    junk.write_text("not a report")
    assert main(["profile", "import", str(junk)]) == 2
    assert "junk.ncu-rep" in capsys.readouterr().err
