"""Rule rows that the timed figures are backed by checked work (issue 25). Pure functions.

- `timed_outputs`, per shape: the candidate's timed calls checked in full (`gate.timing.timed_checks`)
  were all right; a wrong one fails, naming the call and the mismatch.
- `timing_methods_agree`, per shape: the timed figure against a device-wide wall clock around a
  synchronised eager batch (`all_streams_us`: `cudaDeviceSynchronize` on both ends, so work on any
  stream counts). Where that batch was GPU-bound, an honest figure reads at least `TIMED_MIN_SHARE` of
  it (both run warm and back to back, or colder); a graph that replayed nothing read 1000x under it.
  A host-bound batch bounds nothing, and the row says so.
- `timer_untouched`, once: the bench's pinned timer references (`gate.timing.pinned`) were still in
  place after the submitted code ran. The figures, timed through the pinned ones, stand; the attempt
  is what is rejected.
- `profile_matches_timing`, per shape: ncu's kernel durations of the one profiled call within
  `PROFILE_TIMING_FACTOR` x + `PROFILE_TIMING_SLACK_US` of the timed figure. That wide because ncu
  locks the SM clock to base (`--clock-control base`; H100 SXM: 1.59 vs up to 1.98 GHz boost), flushes
  caches per pass where a graph replay runs warm, and omits a graph's launch gaps (~1-2 µs at small
  shapes). A kernel that detects the profiler lands outside; its profile's rows are then not judged
  (`distrust_profile`): the mismatch is the finding.
"""

from __future__ import annotations

from functools import partial

from gate.domain.launches import by_shape
from gate.domain.results import BenchResult, JobResult, ShapeTiming, StageStatus
from gate.domain.rule_catalog import Kind, Rule, of_kind
from gate.domain.verdict import RuleOutcome, RuleRow
from gate.verdict.rules import about, inconclusive, unsteady

_NCU_RULES = {spec.rule for kind in (Kind.NCU_ABSOLUTE, Kind.NCU_RELATIVE) for spec in of_kind(kind)}

O = RuleOutcome
TIMED_MIN_SHARE = 0.5
DEVICE_BOUND_RATIO = 1.25        # device-wide time per call over the host's enqueue time: GPU-bound
PROFILE_TIMING_FACTOR, PROFILE_TIMING_SLACK_US = 2.0, 2.0


def timed_output_row(st: ShapeTiming) -> RuleRow | None:
    if st.timed_checked is None:
        return None
    if st.timed_checked == 0:
        return RuleRow(Rule.TIMED_OUTPUTS, O.NOT_RUN, "no timed call was checked", **about(st))
    outcome = O.FAIL if st.timed_wrong else O.PASS
    return RuleRow(Rule.TIMED_OUTPUTS, outcome, st.timed_evidence, **about(st), value=st.timed_wrong or 0,
                   threshold=0, unit="wrong calls")


def _method_words(st: ShapeTiming) -> str:
    parts = [f"timed by {st.method} at {st.candidate.median_us:.3g} us"]
    if st.graph_us is not None:
        nodes = f" ({st.graph_work_nodes} work nodes captured)" if st.graph_work_nodes is not None else ""
        parts.append(f"graph {st.graph_us:.3g} us{nodes}")
    if st.eager_us is not None:
        parts.append(f"eager {st.eager_us:.3g} us")
    if st.all_streams_us is not None:
        parts.append(f"device-wide {st.all_streams_us:.3g} us per call")
    words = ", ".join(parts)
    return f"{words} ({st.method_note})" if st.method_note else words


def timing_methods_row(st: ShapeTiming) -> RuleRow | None:
    if st.eager_us is None:                 # a bench recorded before the cross-check
        return None
    timed = st.candidate.median_us
    if st.all_streams_us is None:
        return RuleRow(Rule.TIMING_METHODS_AGREE, O.NOT_RUN, "no device-wide measure", **about(st), value=timed,
                       unit="us")
    words = _method_words(st)
    device_bound = st.all_streams_us > DEVICE_BOUND_RATIO * (st.enqueue_us or 0.0)
    limit = round(TIMED_MIN_SHARE * st.all_streams_us, 4)
    row = partial(RuleRow, Rule.TIMING_METHODS_AGREE, **about(st), value=timed, baseline=round(st.all_streams_us, 3),
                  unit="us")
    if not device_bound:
        return row(O.PASS, f"{words}; the device-wide batch was paced by the host ({st.enqueue_us or 0:.3g} us to "
                           "enqueue a call) and bounds nothing")
    if timed < limit:
        return row(O.FAIL, f"no honest figure: {words}; the timed figure is under {TIMED_MIN_SHARE:g} x the "
                           "device-wide time (work the timed method did not see)", threshold=limit)
    return row(O.PASS, words, threshold=limit)


def timer_row(bench: BenchResult) -> RuleRow:
    if bench.tampered:
        return RuleRow(Rule.TIMER_UNTOUCHED, O.FAIL, "submitted code replaced the timer's " + ", ".join(
            bench.tampered) + "; the figures were taken through references pinned before it was imported",
            value=len(bench.tampered), threshold=0, unit="replaced")
    return RuleRow(Rule.TIMER_UNTOUCHED, O.PASS, "the timer's references were untouched", value=0, threshold=0,
                   unit="replaced")


def profile_rows(result: JobResult) -> list[RuleRow]:
    prof, bench = result.candidate.profile, result.bench
    if prof is None or prof.status is not StageStatus.PASSED or bench is None:
        return []
    launches = by_shape(prof.kernels)
    rows = []
    for st in bench.shapes:
        timed = st.candidate.median_us
        ks = [k for k in launches.get(st.shape, []) if not k.dtype or k.dtype == st.dtype]
        durations = [k.duration_ns for k in ks if k.duration_ns is not None]
        row = partial(RuleRow, Rule.PROFILE_MATCHES_TIMING, **about(st), unit="us")
        if not ks:
            rows.append(row(O.FAIL, f"the profiled call of this shape launched no kernel, the timed one took "
                                    f"{timed:.3g} us", value=0.0, baseline=timed))
            continue
        if len(durations) < len(ks):
            rows.append(row(O.NOT_RUN, "no kernel duration in the profile", baseline=timed))
            continue
        profiled = sum(durations) / 1e3
        low = timed / PROFILE_TIMING_FACTOR - PROFILE_TIMING_SLACK_US
        high = timed * PROFILE_TIMING_FACTOR + PROFILE_TIMING_SLACK_US
        figures = (f"Nsight Compute measured {profiled:.3g} us over {len(ks)} launch(es), the timed call "
                   f"{timed:.3g} us (allowed {max(low, 0):.3g}..{high:.3g} us: base vs boost clocks, cold vs warm "
                   f"caches, launch gaps)")
        ok = low <= profiled <= high
        rows.append(row(O.PASS if ok else O.FAIL, figures if ok else f"the profiled program is not the timed one: "
                        f"{figures}", value=round(profiled, 3), baseline=round(timed, 3), threshold=round(high, 3)))
    return rows


def timing_integrity_rows(result: JobResult) -> list[RuleRow]:
    """Every row above for one job whose bench passed; none for a bench recorded before these checks
    (no shape with `timed_checked`: stored history, hand-built sample data), which has none of their figures."""
    bench = result.bench
    if bench is None or bench.status is not StageStatus.PASSED:
        return []
    if all(st.timed_checked is None for st in bench.shapes):
        return []
    rows: list[RuleRow] = []
    for st in bench.shapes:
        rows += [r for r in (timed_output_row(st), timing_methods_row(st)) if r is not None]
    # another process or moving clocks lengthen the device-wide window, not the timed one
    rows = unsteady(rows, bench, lambda r: r.rule == Rule.TIMING_METHODS_AGREE and r.outcome is O.FAIL)
    return rows + [timer_row(bench)] + profile_rows(result)


def distrust_profile(rows: list[RuleRow]) -> list[RuleRow]:
    """The Nsight Compute rules are not judged on a profile that does not describe the timed program:
    their passes and failures become inconclusive, the `profile_matches_timing` failure decides."""
    if not any(r.rule == Rule.PROFILE_MATCHES_TIMING and r.outcome is O.FAIL for r in rows):
        return rows
    return inconclusive(rows, "not judged: the profile does not describe the timed program",
                        lambda r: r.rule in _NCU_RULES and r.outcome in (O.PASS, O.FAIL))
