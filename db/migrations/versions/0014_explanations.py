"""why this score: each word's contribution to a pair's PLUIE score, computed on demand by the worker

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25 19:30:00.000000

`explanations`: one row per (PLUIE run, pair) someone asked "why this score" of (db.explanations). The
page requests it ("queued"); a worker claims it under a lease (`lease_owner`, `lease_expires_at`: a
worker that dies leaves it claimable again once the lease expires), scores the pair with each word left
out by the run's own model (pluie_core.explain.word_contributions) and stores `result` (the explanation
as JSON: the score, each token's span and contribution) with status "done", or its sentence in `error`
with status "failed". Kept once computed; removed with its run or its pair. No existing row changes.
"""
from alembic import op
import sqlalchemy as sa


revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('explanations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('pair_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('result', sa.JSON(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('lease_owner', sa.String(length=100), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(), nullable=True),
    sa.Column('requested_at', sa.DateTime(), nullable=False),
    sa.Column('done_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['pair_id'], ['pairs.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['score_runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'pair_id', name='uq_explanations_run_pair')
    )
    op.create_index('ix_explanations_pair_id', 'explanations', ['pair_id'], unique=False)
    op.create_index('ix_explanations_status', 'explanations', ['status'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_explanations_status', table_name='explanations')
    op.drop_index('ix_explanations_pair_id', table_name='explanations')
    op.drop_table('explanations')
