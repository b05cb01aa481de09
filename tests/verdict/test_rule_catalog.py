"""The rule catalogue is the one place a rule is declared: the rule names, the manifest's keys, the
docs' gate table, the messages' operators, the kernel page's charts and `decide`'s builders all
follow it."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from gate.domain import FunctionResources, Gates, KernelMetrics, RuleOutcome, RuleRow
from gate.domain import rule_catalog as catalog
from gate.domain.manifest import profile_rules_set
from gate.domain.names import NCU_METRICS, Stage
from gate.domain.rule_catalog import CATALOG, SETTINGS, STAGE_ROWS, Bound, Kind, Rule
from gate.figures.kernel_page import GROUPS, rule_groups
from gate.notify import messages

DOCS = Path(__file__).resolve().parents[2] / "docs" / "manifest.md"


def docs_gate_table() -> str:
    """The table under docs/manifest.md's `[kernel.gates]` heading, as written."""
    text = DOCS.read_text()
    start = text.index("| key | default | reads | meaning |", text.index("## `[kernel.gates]`"))
    return text[start:text.index("\n\n", start)]


def test_the_docs_gate_table_is_the_catalogues():
    assert docs_gate_table() == catalog.manifest_table()


def test_the_docs_check_fails_when_a_row_is_removed():
    for dropped in (s for s in CATALOG if s.key is not None):
        fewer = tuple(s for s in CATALOG if s is not dropped)
        assert docs_gate_table() != catalog.manifest_table(fewer), dropped.key
        assert f"`{dropped.key}`" not in catalog.manifest_table(fewer)


def test_gates_has_a_field_per_catalogue_key_then_the_settings_typed_by_its_row():
    keys = [s.key for s in CATALOG if s.key is not None]
    assert len(keys) == len(set(keys))
    assert [f.name for f in dataclasses.fields(Gates)] == keys + list(SETTINGS)
    hints, gates = typing.get_type_hints(Gates), Gates()
    assert hints["max_registers"] == int | None and hints["min_tensor_pipe_pct"] == float | None
    assert hints["require_sass"] == hints["absolute_shapes"] == list[str]
    assert (hints["max_error_ratio"], gates.max_error_ratio) == (float, 4.0)
    assert all(getattr(gates, key) in (None, []) for key in keys if key != "max_error_ratio")


def test_the_rule_names_are_the_stage_rows_and_the_catalogue_rows():
    # a stage that failed as a whole has a row named after it; correctness is also a rule, per shape
    assert {r.value for r in STAGE_ROWS} <= {s.value for s in Stage}
    assert [r.value for r in Rule] == [s.value for s in STAGE_ROWS] + [s.rule for s in CATALOG]
    assert all(spec.rule is Rule(spec.rule) for spec in CATALOG)
    assert Rule.MAX_GLOBAL_SECTORS_PER_REQUEST == "max_global_sectors_per_request"


def test_every_ncu_rule_reads_a_stored_per_shape_metric():
    for spec in CATALOG:
        if spec.kind in (Kind.NCU_ABSOLUTE, Kind.NCU_RELATIVE):
            assert spec.metric in NCU_METRICS, spec.rule
            assert hasattr(KernelMetrics("k"), spec.metric.value), spec.rule
            assert spec.words and spec.unit


def test_static_rows_name_a_ptxas_field():
    function = FunctionResources("f", "sm_90", 32, 0, 0, 0, 0, {})
    for spec in catalog.of_kind(Kind.STATIC_LIMIT) + catalog.of_kind(Kind.STATIC_INCREASE):
        assert spec.rule == Rule.STATIC_DELTA or isinstance(getattr(function, spec.metric), int), spec.rule


def test_only_the_relative_ncu_rules_read_the_baselines_profile():
    reading = tuple(spec.rule for spec in catalog.CATALOG if spec.baseline_profile)
    assert reading == (Rule.MAX_TENSOR_PIPE_DROP_PCT, Rule.MAX_BANK_CONFLICT_INCREASE_PCT)
    assert profile_rules_set(Gates(min_dram_pct=50)) and not profile_rules_set(Gates(max_registers=9))


@pytest.mark.parametrize(("rule", "outcome", "operator"), [
    (Rule.MAX_BANK_CONFLICT_PCT, RuleOutcome.FAIL, ">"),
    (Rule.MIN_TENSOR_PIPE_PCT, RuleOutcome.FAIL, "<"),
    (Rule.MIN_TENSOR_PIPE_PCT, RuleOutcome.PASS, ">="),
    # named max_ but a floor: the candidate may lose at most this many points below the baseline's
    (Rule.MAX_TENSOR_PIPE_DROP_PCT, RuleOutcome.FAIL, "<"),
    (Rule.PHYSICAL_FLOOR, RuleOutcome.FAIL, "<"),
    (Rule.BUILD, RuleOutcome.FAIL, "vs"),
])
def test_the_messages_operator_is_the_rules_bound(rule, outcome, operator):
    row = RuleRow(rule, outcome, "why", shape="m1024", value=40.0, threshold=45.0, unit="%")
    assert messages.figure(row).startswith(f"{rule} 40% {operator} 45%")


def test_each_charted_rule_draws_its_threshold_on_the_figure_it_judges():
    groups = {g.key: g for g in GROUPS}
    conflicts = groups["conflicts"]
    assert conflicts.rule == Rule.MAX_BANK_CONFLICT_PCT
    assert [m.value for m in conflicts.metrics] == ["shared_conflict_pct"]     # ld + st pooled, not split
    for spec in CATALOG:
        if spec.chart is not None:
            assert groups[spec.chart.key].metrics == (spec.metric,)


def test_a_rule_dropped_from_the_catalogue_loses_its_chart():
    fewer = tuple(s for s in CATALOG if s.rule != Rule.MIN_DRAM_PCT)
    assert "dram" in {g.key for g in rule_groups()} and "dram" not in {g.key for g in rule_groups(fewer)}


def test_bounds_are_what_decide_applies():
    assert all(s.bound is Bound.FLOOR for s in CATALOG if s.key and s.key.startswith("min_"))
    assert all(s.bound is Bound.NONE for s in catalog.of_kind(Kind.SASS))


def test_no_catalogue_text_breaks_the_docs_table():
    assert not [spec.rule for spec in CATALOG if "|" in spec.reads + spec.meaning]
    cells = {line.count("|") for line in catalog.manifest_table().splitlines()}
    assert cells == {5}                                      # key, default, reads, meaning
