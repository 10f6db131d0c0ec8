"""quality checks: gold pairs, their rate in each queue, flag settings

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 04:20:00.000000

A campaign may hold gold / attention-check pairs (`gold_pairs`: a known level, or only the known side
of the paraphrase boundary) and mixes them into each annotator's queue at `gold_rate` checks per
queue pair; an Assignment says whether it served one (`is_gold`), so checks never count in the quota.
`gold_min_accuracy`, `fast_fraction` and `streak_length` say when the live view flags an annotator.
Existing campaigns get no checks (rate 0) and the default flag settings; their data is untouched.
"""
from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'gold_pairs',
        sa.Column('campaign_id', sa.Integer(), nullable=False),
        sa.Column('pair_id', sa.Integer(), nullable=False),
        sa.Column('level', sa.Integer(), nullable=True),
        sa.Column('binary_label', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['campaign_id'], ['campaigns.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['pair_id'], ['pairs.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('campaign_id', 'pair_id'),
    )
    with op.batch_alter_table('campaigns', schema=None) as batch_op:
        batch_op.add_column(sa.Column('gold_rate', sa.Float(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('gold_min_accuracy', sa.Float(), nullable=False, server_default='0.7'))
        batch_op.add_column(sa.Column('fast_fraction', sa.Float(), nullable=False, server_default='0.3333333333333333'))
        batch_op.add_column(sa.Column('streak_length', sa.Integer(), nullable=False, server_default='10'))
    with op.batch_alter_table('assignments', schema=None) as batch_op:
        batch_op.add_column(sa.Column('is_gold', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.create_index('ix_assignments_campaign_gold', ['campaign_id', 'is_gold', 'annotator_id', 'pair_id'],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table('assignments', schema=None) as batch_op:
        batch_op.drop_index('ix_assignments_campaign_gold')
        batch_op.drop_column('is_gold')
    with op.batch_alter_table('campaigns', schema=None) as batch_op:
        batch_op.drop_column('streak_length')
        batch_op.drop_column('fast_fraction')
        batch_op.drop_column('gold_min_accuracy')
        batch_op.drop_column('gold_rate')
    op.drop_table('gold_pairs')
