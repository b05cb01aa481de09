"""A revision's figures by its id, and sample data found without reading every revision (issue 45).

The revision page read a revision's figures by job id and the compare page by revision id; neither
column led an index, so each request scanned all of `metrics` (28.8 M rows at 100,000 revisions:
seconds per page). `ix_metrics_revision` makes both one range. `ix_revisions_source` answers the
banner's "is any revision synthetic" on every page without reading the revisions of a real history.

Revision ID: 0011
Revises: 0009
"""

from __future__ import annotations

from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_metrics_revision', 'metrics', ['revision_id'])
    op.create_index('ix_revisions_source', 'revisions', ['source'])


def downgrade() -> None:
    op.drop_index('ix_revisions_source', table_name='revisions')
    op.drop_index('ix_metrics_revision', table_name='metrics')
