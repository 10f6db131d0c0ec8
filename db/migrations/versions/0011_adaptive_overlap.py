"""adaptive overlap (a campaign may ask for enough annotators per pair instead of a fixed number) and
the campaign's aggregation method

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24 01:00:00.000000

`campaigns.overlap_max` and `campaigns.confidence`: when set, `overlap` is the minimum number of
annotators per pair and a pair gets one more, up to `overlap_max`, while the vote share of its
binarised majority is below `confidence` (db.annotation.adaptive_overlap). `campaign_pairs.n_wanted`
holds how many annotators each pair wants now; the queue's covering indexes carry it, so finding the
next free pair still reads the index only. `campaigns.aggregation`: the method of pluie_core.aggregation
the campaign's final labels use by default (Export, publish, Live campaign); NULL is majority, as before.
Existing campaigns keep their fixed overlap and the majority rule (NULLs). `ix_labels_updated_at`:
db.analysis.store_version reads the latest labels.updated_at on every page run (a scan of every label
without it: 0.5 s at 3,000,000 labels).
"""
from alembic import op
import sqlalchemy as sa


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_labels_updated_at', 'labels', ['updated_at'], unique=False)
    with op.batch_alter_table('campaigns', schema=None) as batch_op:
        batch_op.add_column(sa.Column('overlap_max', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('confidence', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('aggregation', sa.String(length=20), nullable=True))
    with op.batch_alter_table('campaign_pairs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('n_wanted', sa.Integer(), nullable=True))
        batch_op.drop_index('ix_campaign_pairs_rank')
        batch_op.drop_index('ix_campaign_pairs_fill')
        batch_op.create_index('ix_campaign_pairs_fill', ['campaign_id', 'n_assigned', 'rank', 'pair_id', 'n_wanted'],
                              unique=False)
        batch_op.create_index('ix_campaign_pairs_rank', ['campaign_id', 'rank', 'n_assigned', 'pair_id', 'n_wanted'],
                              unique=False)


def downgrade() -> None:
    op.drop_index('ix_labels_updated_at', table_name='labels')
    with op.batch_alter_table('campaign_pairs', schema=None) as batch_op:
        batch_op.drop_index('ix_campaign_pairs_rank')
        batch_op.drop_index('ix_campaign_pairs_fill')
        batch_op.create_index('ix_campaign_pairs_fill', ['campaign_id', 'n_assigned', 'rank', 'pair_id'], unique=False)
        batch_op.create_index('ix_campaign_pairs_rank', ['campaign_id', 'rank', 'n_assigned', 'pair_id'], unique=False)
        batch_op.drop_column('n_wanted')
    with op.batch_alter_table('campaigns', schema=None) as batch_op:
        batch_op.drop_column('aggregation')
        batch_op.drop_column('confidence')
        batch_op.drop_column('overlap_max')
