"""Events notify must hear of, kept until it has (`notices`).

Storage no longer runs notify's code inside its transactions: the event (jobs queued, a verdict, jobs
cancelled) is stored as a row in the event's transaction, handed to notify after the commit, and
deleted in the transaction that stores the messages notify made. A row left behind (the process died
between the two commits) is handed by the sweeper.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'notices',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=20), nullable=False),
        sa.Column('body', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
    )


def downgrade() -> None:
    op.drop_table('notices')
