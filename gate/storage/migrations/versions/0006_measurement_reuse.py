"""Jobs carry their reuse key and, when they reused an earlier job's figures, that job's id; a
revision says whether its submitter asked to measure everything anew (docs/reuse.md). Rows stored
before have no key: they are never reused.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('reuse_key', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('reused_from_job_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key('fk_jobs_reused_from_job_id', 'jobs', ['reused_from_job_id'], ['id'])
        batch_op.create_index('ix_jobs_reuse', ['kernel', 'reuse_key'])
    with op.batch_alter_table('revisions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('remeasure', sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table('revisions', schema=None) as batch_op:
        batch_op.drop_column('remeasure')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index('ix_jobs_reuse')
        batch_op.drop_constraint('fk_jobs_reused_from_job_id', type_='foreignkey')
        batch_op.drop_column('reused_from_job_id')
        batch_op.drop_column('reuse_key')
