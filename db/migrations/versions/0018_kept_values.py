"""what a signed-in person's pages keep for them

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07 12:00:00.000000

`kept_values`: per account, the last value of each widget a page asked to keep (the reviewer's name, a
half-typed note, a half-filled New campaign form), as JSON, one row per key (db.kept, ui.access.keep). It
was kept in the server's memory per browser, gone at a restart; a store used without accounts still is.
"""
from alembic import op
import sqlalchemy as sa


revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'kept_values',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('account_id', sa.Integer(), nullable=False),
        sa.Column('key', sa.String(length=200), nullable=False),
        sa.Column('value', sa.Text(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['account_id'], ['accounts.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('account_id', 'key', name='uq_kept_values_account_key'),
    )


def downgrade() -> None:
    op.drop_table('kept_values')
