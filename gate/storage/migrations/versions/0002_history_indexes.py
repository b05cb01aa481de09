"""History indexes: a covering index per metric trace and a kernel's verdicts in commit order.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_metrics_series', 'metrics',
                    ['kernel', 'gpu_kind', 'name', 'series', 'shape', 'revision_id', 'value'])
    op.create_index('ix_verdicts_kernel', 'verdicts', ['kernel', 'gpu_kind', 'revision_id', 'verdict'])


def downgrade() -> None:
    op.drop_index('ix_verdicts_kernel', table_name='verdicts')
    op.drop_index('ix_metrics_series', table_name='metrics')
