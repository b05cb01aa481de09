"""`gate profile import FILE.ncu-rep [--json]`: the gate metrics of every kernel in a report."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gate.domain import KernelMetrics


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="Nsight Compute reports")
    psub = p.add_subparsers(dest="profile_command", required=True, metavar="ACTION")
    imp = psub.add_parser("import", help="print the gate metrics of every kernel in a .ncu-rep")
    imp.add_argument("file", help="an Nsight Compute report (.ncu-rep)")
    imp.add_argument("--json", action="store_true")


# (header, KernelMetrics field, format) of the table for people; None prints "n/a"
_COLUMNS: list[tuple[str, str, str]] = [
    ("time us", "duration_ns", "{:.1f}"),
    ("tensor %", "tensor_pipe_pct", "{:.1f}"),
    ("gmma %", "gmma_inst_pct", "{:.1f}"),
    ("ld conf %", "ld_bank_conflict_pct", "{:.1f}"),
    ("st conf %", "st_bank_conflict_pct", "{:.1f}"),
    ("warps %", "warps_active_pct", "{:.1f}"),
    ("DRAM %", "dram_pct", "{:.1f}"),
    ("SM %", "sm_throughput_pct", "{:.1f}"),
    ("regs", "registers", "{}"),
    ("smem B", "smem_per_block_bytes", "{}"),
    ("LDL", "local_ld_inst", "{:.0f}"),
    ("STL", "local_st_inst", "{:.0f}"),
]
_KERNEL_WIDTH = 40


def format_table(kernels: list[KernelMetrics]) -> str:
    """A fixed-width table, one row per launch, then the metrics each launch lacked."""
    header = f"{'#':>2} {'kernel':<{_KERNEL_WIDTH}}" + "".join(f"{h:>11}" for h, _, _ in _COLUMNS)
    lines = [header]
    for i, k in enumerate(kernels):
        name = k.kernel + (f" [{k.shape}]" if k.shape else "")
        if len(name) > _KERNEL_WIDTH:
            name = name[: _KERNEL_WIDTH - 3] + "..."
        cells = []
        for _, attr, fmt in _COLUMNS:
            value = getattr(k, attr)
            if value is not None and attr == "duration_ns":
                value = value / 1000.0
            cells.append(f"{'n/a' if value is None else fmt.format(value):>11}")
        lines.append(f"{i:>2} {name:<{_KERNEL_WIDTH}}" + "".join(cells))
    for i, k in enumerate(kernels):
        if k.missing_metrics:
            lines.append(f"#{i} {k.kernel}: n/a in this report: {', '.join(k.missing_metrics)}")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from gate.domain.codec import to_json
    from gate.nvidia.ncu_report import read_report

    path = Path(args.file)
    kernels = read_report(path)
    if args.json:
        print(json.dumps({"report": str(path), "kernels": to_json(kernels)}, indent=2))
    else:
        print(format_table(kernels))
    return 0
