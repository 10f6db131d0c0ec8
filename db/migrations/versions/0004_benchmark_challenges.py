"""datasets: benchmark challenge (PARAPHRASUS scorecard)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 04:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.add_column(sa.Column('challenge', sa.String(length=20), nullable=True))
        batch_op.add_column(sa.Column('benchmark', sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.drop_column('benchmark')
        batch_op.drop_column('challenge')
