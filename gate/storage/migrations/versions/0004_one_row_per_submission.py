"""One repository row per URL and one active revision per identical submission (issue 12).

`repositories.url_key` (SHA-256 of the canonical URL, unique) lets the database refuse a second row
for a place when first submissions race; rows that such races already duplicated are merged into the
oldest (their revisions move to it). `revisions.submission_key` with a partial unique index makes an
identical submission while one is queued or running return that one.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

_ACTIVE = sa.text("status IN ('queued', 'running')")


def upgrade() -> None:
    with op.batch_alter_table('repositories') as batch:
        batch.add_column(sa.Column('url_key', sa.String(length=64), nullable=True))
    _key_and_merge(op.get_bind())
    with op.batch_alter_table('repositories') as batch:
        batch.alter_column('url_key', existing_type=sa.String(length=64), nullable=False)
        batch.create_unique_constraint('uq_repositories_url_key', ['url_key'])
    with op.batch_alter_table('revisions') as batch:
        batch.add_column(sa.Column('submission_key', sa.String(length=64), nullable=True))
    op.create_index('uq_revisions_active_submission', 'revisions', ['repository_id', 'submission_key'],
                    unique=True, postgresql_where=_ACTIVE, sqlite_where=_ACTIVE)


def _key_and_merge(bind: sa.Connection) -> None:
    """Fill `url_key`; the revisions of a duplicated place move to its oldest row, the rest go."""
    kept: dict[str, int] = {}
    for repo_id, url in bind.execute(sa.text("SELECT id, url FROM repositories ORDER BY id")).all():
        key = hashlib.sha256(url.encode()).hexdigest()
        if key not in kept:
            kept[key] = repo_id
            bind.execute(sa.text("UPDATE repositories SET url_key = :k WHERE id = :i"), {"k": key, "i": repo_id})
            continue
        bind.execute(sa.text("UPDATE revisions SET repository_id = :keep WHERE repository_id = :dup"),
                     {"keep": kept[key], "dup": repo_id})
        bind.execute(sa.text("DELETE FROM repositories WHERE id = :dup"), {"dup": repo_id})


def downgrade() -> None:
    op.drop_index('uq_revisions_active_submission', table_name='revisions')
    with op.batch_alter_table('revisions') as batch:
        batch.drop_column('submission_key')
    with op.batch_alter_table('repositories') as batch:
        batch.drop_constraint('uq_repositories_url_key', type_='unique')
        batch.drop_column('url_key')
