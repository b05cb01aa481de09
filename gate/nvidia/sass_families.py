"""The SASS opcode families a kernel engineer watches, and their counts in a base-opcode histogram.

The static stage keeps every function's histogram of base opcodes (`FunctionResources.sass_opcodes`,
`HMMA.16816.F32` -> HMMA); these families sum it into the few figures the history charts. Names are
NVIDIA's instruction-set reference (CUDA Binary Utilities); those marked `seen` were read from
cuobjdump 13.0 output here, the others are documented siblings:

    tensor core    mma.sync (sm_80+): HMMA seen, IMMA seen (s8), QMMA seen (fp8, sm_89 / sm_120),
                   DMMA, BMMA; wgmma (sm_90a): HGMMA seen, IGMMA, QGMMA, BGMMA; tcgen05.mma
                   (sm_100a): UTCHMMA, UTCIMMA, UTCQMMA, UTCOMMA all seen (f16, i8, f8f6f4, mxf4)
    shared memory  LDS, STS, LDSM (ldmatrix), STSM (stmatrix, sm_90) seen; ATOMS (shared atomics)
    global memory  LDG, STG, REDG (sm_100's global reduction) seen; RED, ATOMG (global atomics)
    async copies   LDGSTS (cp.async) seen; TMA: UTMALDG, UTMASTG, UBLKCP (cp.async.bulk) seen,
                   UTMAREDG, UBLKRED (bulk reductions)
    barriers       BAR (bar.sync, named barriers), SYNCS (mbarrier arrive / try-wait) seen; ARRIVES
    shuffles       SHFL
    total          every instruction but NOP

Generic LD/ST and the prefetches (UTMAPF, UBLKPF) are in no family but the total. NOP is not counted:
cuobjdump lists the padding after a function's last branch as NOPs, which move with the code's length
modulo the alignment, not with the work.
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
    """Each family's instruction count and the total (`SASS_METRICS` order, 0 where none) over the
    base-opcode histograms of `histograms` (one per function: a kernel's functions summed)."""
    merged: dict[str, int] = {}
    for histogram in histograms:
        for opcode, n in histogram.items():
            merged[opcode] = merged.get(opcode, 0) + n
    counts = {metric: sum(merged.get(op, 0) for op in opcodes) for metric, opcodes in FAMILIES.items()}
    counts[Metric.SASS_TOTAL] = sum(n for op, n in merged.items() if op != PADDING)
    return counts
