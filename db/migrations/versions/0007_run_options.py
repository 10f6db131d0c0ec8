"""score run options: a baseline's model and settings, PLUIE's device map and quantisation

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 04:10:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('score_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('options', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('score_runs', schema=None) as batch_op:
        batch_op.drop_column('options')
