"""One table of revision details per page instead of a copy in every history trace (pure).

A history point's hover shows its revision's sha, date and message. On the kernel page the same few
hundred revisions recur in all twenty traces, and those strings were two thirds of the page. So a
trace's customdata rows carry [revision id, verdict, (count)] only and the trace is marked
`meta.revisions = "shared"`; `revision_table` writes the details once, keyed by revision id, and
`dashboards/static/gate.js` puts them back as customdata[1:4] before plotly draws, so hovers and
clicks read [revision id, sha, date, message, verdict, (count)] (see `gate/figures/series_charts.py`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from datetime import datetime

from gate.domain.wording import cut

SHARED = "shared"
SHA_CHARS = 8
MESSAGE_CHARS = 72


def revision_table(details: Mapping[int, tuple[str, datetime | None, str]]
                   ) -> dict[str, list[str]]:
    """{revision id: [short sha, commit date, message's first line cut to fit]} of `details`
    ({revision id: (sha, commit date, first line)}). The message is HTML-escaped: plotly renders a
    hover's text as HTML, so `<a href=...>` in a commit message was a live link (issue 24)."""
    return {str(rev): [sha[:SHA_CHARS], at.strftime("%Y-%m-%d %H:%M") if at else "",
                       _short(message)]
            for rev, (sha, at, message) in details.items()}


def _short(message: str, limit: int = MESSAGE_CHARS) -> str:
    """Cut to `limit` characters, then escaped (cutting after escaping could split an entity)."""
    return html.escape(cut(message, limit), quote=False)
