"""The SASS opcode families a kernel engineer watches, and their counts in a base-opcode histogram.

The static stage keeps every function's histogram of base opcodes (`HMMA.16816.F32` -> HMMA); these
families sum it into the few figures the history charts. Names are NVIDIA's instruction-set reference
(CUDA Binary Utilities); read from cuobjdump 13.0 output here: HMMA, IMMA, QMMA (mma.sync), HGMMA
(wgmma), UTCHMMA, UTCIMMA, UTCQMMA, UTCOMMA (tcgen05.mma), LDS, STS, LDSM, STSM, LDG, STG, REDG, LDGSTS,
UTMALDG, UTMASTG, UBLKCP, BAR, SYNCS; the others are documented siblings. Generic LD/ST and the
prefetches (UTMAPF, UBLKPF) are in no family but the total. NOP is not counted: cuobjdump lists the
padding after a function's last branch as NOPs, which move with the code's alignment, not the work.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gate.domain.names import Metric

# Family -> its base opcodes, in the order the charts draw them.
FAMILIES: dict[Metric, frozenset[str]] = {
    Metric.SASS_TENSOR_CORE: frozenset({"HMMA", "IMMA", "QMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA",
                                        "BGMMA", "UTCHMMA", "UTCIMMA", "UTCQMMA", "UTCOMMA"}),
    Metric.SASS_SHARED: frozenset({"LDS", "STS", "LDSM", "STSM", "ATOMS"}),
    Metric.SASS_GLOBAL: frozenset({"LDG", "STG", "RED", "REDG", "ATOMG"}),
    Metric.SASS_ASYNC_COPY: frozenset({"LDGSTS", "UTMALDG", "UTMASTG", "UTMAREDG", "UBLKCP", "UBLKRED"}),
    Metric.SASS_BARRIER: frozenset({"BAR", "SYNCS", "ARRIVES"}),
    Metric.SASS_SHUFFLE: frozenset({"SHFL"}),
}
PADDING = "NOP"
# Every stored SASS figure: the families, then the total.
SASS_METRICS: tuple[Metric, ...] = (*FAMILIES, Metric.SASS_TOTAL)


def family_counts(histograms: Iterable[Mapping[str, int]]) -> dict[Metric, int]:
    """Each family's instruction count and the total (`SASS_METRICS` order) over a kernel's functions."""
    merged: dict[str, int] = {}
    for histogram in histograms:
        for opcode, n in histogram.items():
            merged[opcode] = merged.get(opcode, 0) + n
    counts = {metric: sum(merged.get(op, 0) for op in opcodes) for metric, opcodes in FAMILIES.items()}
    counts[Metric.SASS_TOTAL] = sum(n for op, n in merged.items() if op != PADDING)
    return counts
