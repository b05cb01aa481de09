"""A revision keeps where its commit stands in the repository's history (issue 45): its first-parent
depth and whether it lies on the default branch's first-parent line. A kernel's history is drawn in
that order, not in submission order. Rows stored before have neither: the history orders them by
commit time, then id, and counts them on the branch unless they are a pull request's.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('revisions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('position', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('on_branch', sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('revisions', schema=None) as batch_op:
        batch_op.drop_column('on_branch')
        batch_op.drop_column('position')
