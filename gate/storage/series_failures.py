"""Which rules failed each verdict of a held history: what puts a verdict's marker on a point (issue 45).

A reject drawn on every chart made an innocent figure look guilty: a point is marked only where a
rule that failed at its revision judges the figure. The series cache keeps, beside each verdict row,
the rules whose outcome gave that verdict (`VERDICT_OF_OUTCOME`) with their shapes, and the deciding
row's name for the hover; read with the rows, and only for verdicts other than accept (a history is
mostly accepts, so a long one reads few rule tables). Nothing new is stored: the rows are the verdict's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sqlalchemy import Connection, bindparam, select

from gate.domain.verdict import VERDICT_OF_OUTCOME, Verdict
from gate.storage.models import VerdictRecord


@dataclass(frozen=True)
class Failed:
    """The failing rule rows of held verdict rows: one entry per row that failed, rows ascending."""

    rows: np.ndarray          # int64: the held verdict row (index into `HeldHistory.revision_ids`)
    rules: np.ndarray         # object (str): the rule that failed there
    shapes: np.ndarray        # object (str): the shape it failed at; "" = the whole kernel
    deciding: np.ndarray      # object (str), one per held verdict row: "rule shape dtype" of the row
                              # that decided it ("" for an accept)

    def then(self, more: Failed) -> Failed:
        """These rows, then `more` (read for the rows appended after these; its rows already count them)."""
        return Failed(*(np.concatenate([getattr(self, f), getattr(more, f)])
                        for f in ("rows", "rules", "shapes", "deciding")))

    def at_shape(self, shape: str) -> np.ndarray:
        """Indexes of the entries that concern a trace of `shape`: a per-kernel rule (shape "")
        judges every shape, and a per-kernel trace (per arch, shape "") is judged at every shape."""
        if not shape:
            return np.arange(self.rows.size)
        return np.flatnonzero((self.shapes == shape) | (self.shapes == ""))


_RULES = (select(VerdictRecord.revision_id, VerdictRecord.verdict, VerdictRecord.rules)
          .where(VerdictRecord.kernel == bindparam("kernel"), VerdictRecord.gpu_kind == bindparam("gpu_kind"),
                 VerdictRecord.revision_id > bindparam("after"), VerdictRecord.verdict != Verdict.ACCEPT.value)
          .order_by(VerdictRecord.revision_id))


def read_failed(conn: Connection, kernel: str, gpu_kind: str, after: int, revision_ids: np.ndarray,
                verdicts: list[str] | tuple[str, ...], first_row: int) -> Failed:
    """The failing rows of the verdict rows just read: `revision_ids` (ascending, above `after`) with
    `verdicts`, held from row `first_row` on. A revision judged twice is drawn with its last verdict,
    so an entry goes to its revision's last row, and only when it is that row's verdict."""
    deciding = np.full(revision_ids.size, "", dtype=object)
    rows, rules, shapes = [], [], []
    for rev, verdict, table in conn.execute(_RULES, {"kernel": kernel, "gpu_kind": gpu_kind, "after": after}):
        row = int(np.searchsorted(revision_ids, rev, side="right")) - 1
        if row < 0 or revision_ids[row] != rev or verdicts[row] != verdict:
            continue
        for r in table or ():
            if r.get("decisive"):
                deciding[row] = " ".join(filter(None, (r.get("rule"), r.get("shape"), r.get("dtype"))))
            if VERDICT_OF_OUTCOME.get(r.get("outcome")) == verdict:
                rows.append(row + first_row)
                rules.append(r.get("rule", ""))
                shapes.append(r.get("shape") or "")
    return Failed(np.array(rows, dtype=np.int64), np.array(rules, dtype=object),
                  np.array(shapes, dtype=object), deciding)
