"""A job records the GPU its worker's slot ran it on: nvidia-smi's index on that host and the GPU's
UUID (issue 42). Rows stored before name none.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('gpu_index', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('gpu_uuid', sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('gpu_uuid')
        batch_op.drop_column('gpu_index')
