"""One table of revision details per page instead of a copy in every history trace (pure).

A history point's hover shows its revision's sha, date and message (`customdata[1:4]`, see
`gate/figures/history.py`). On the kernel page the same few hundred revisions recur in all twenty
traces, and those strings were two thirds of the page. `share_revision_details` moves them into one
table keyed by revision id; `dashboards/static/gate.js` puts them back into each trace's customdata
(the trace is marked `meta.revisions = "shared"`) before plotly draws it, so hovers and clicks read
exactly what a self-contained figure holds.
"""

from __future__ import annotations

SHARED = "shared"
_DETAILS = slice(1, 4)      # sha, date, message


def share_revision_details(figures: list[dict]) -> tuple[list[dict], dict[str, list[str]]]:
    """`figures` with customdata rows cut to [revision id, verdict, (count)], and the cut details
    as {revision id: [sha, date, message]}. Traces without customdata are left as they are."""
    table: dict[str, list[str]] = {}
    out = []
    for fig in figures:
        data = []
        for trace in fig.get("data", []):
            rows = trace.get("customdata")
            if not rows:
                data.append(trace)
                continue
            for row in rows:
                table.setdefault(str(row[0]), list(row[_DETAILS]))
            data.append({**trace, "customdata": [[row[0], *row[4:]] for row in rows],
                         "meta": {**trace.get("meta", {}), "revisions": SHARED}})
        out.append({**fig, "data": data})
    return out, table
