"""Every stored figure carries its environment (GPU model | driver | clock policy), and the covering
index of the history pages holds it, so a trace and its environments are read from the index alone.
Rows stored before read "" (unknown environment).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

_SERIES = ['kernel', 'gpu_kind', 'name', 'series', 'shape', 'revision_id', 'value']


def upgrade() -> None:
    with op.batch_alter_table('metrics', schema=None) as batch_op:
        batch_op.add_column(sa.Column('environment', sa.String(length=300), nullable=False, server_default=''))
    op.drop_index('ix_metrics_series', table_name='metrics')
    op.create_index('ix_metrics_series', 'metrics', [*_SERIES, 'environment'])


def downgrade() -> None:
    op.drop_index('ix_metrics_series', table_name='metrics')
    op.create_index('ix_metrics_series', 'metrics', _SERIES)
    with op.batch_alter_table('metrics', schema=None) as batch_op:
        batch_op.drop_column('environment')
