"""review and adjudication: a reviewer's final level of a pair, apart from the annotators' labels

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 04:20:00.000000

A new table only: existing databases keep every row; a pair without an adjudication keeps the
majority rule (db.review, db.export).
"""
from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('adjudications',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('pair_id', sa.Integer(), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('level', sa.Integer(), nullable=True),
    sa.Column('reviewer', sa.String(length=200), nullable=False),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['pair_id'], ['pairs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('pair_id', 'revision', name='uq_adjudications_pair_revision')
    )


def downgrade() -> None:
    op.drop_table('adjudications')
