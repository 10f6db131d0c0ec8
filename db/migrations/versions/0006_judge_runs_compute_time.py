"""LLM judge runs: a score may be unparsed (NULL value); every run records its compute time

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 04:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('score_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('compute_seconds', sa.Float(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('timed_pairs', sa.Integer(), server_default='0', nullable=False))

    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.alter_column('value', existing_type=sa.Float(), nullable=True)


def downgrade() -> None:
    op.execute("DELETE FROM scores WHERE value IS NULL")
    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.alter_column('value', existing_type=sa.Float(), nullable=False)

    with op.batch_alter_table('score_runs', schema=None) as batch_op:
        batch_op.drop_column('timed_pairs')
        batch_op.drop_column('compute_seconds')
