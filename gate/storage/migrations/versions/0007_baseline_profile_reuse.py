"""Jobs carry their candidate side's key, so that a later job whose baseline is that candidate reuses
its profile rather than profiling the baseline again (docs/reuse.md). Rows stored before have none:
their profiles are never offered.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('candidate_key', sa.String(length=64), nullable=True))
        batch_op.create_index('ix_jobs_candidate_key', ['kernel', 'candidate_key'])


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index('ix_jobs_candidate_key')
        batch_op.drop_column('candidate_key')
