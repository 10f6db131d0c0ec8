"""flags that rest on the labels (κ against the others, the reliability estimate, enough gold checks)
and adaptive overlap decided by a fitted model

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 16:00:00.000000

`campaigns.kappa_min`, `campaigns.reliability_min`: an annotator whose κ against the others, or whose
reliability estimated by the campaign's aggregation method, is below them is flagged;
`campaigns.min_gold_checks`: a gold accuracy resting on fewer answered checks reads "too few checks".
`campaigns.adaptive_fit`: the last background fit of adaptive overlap's model (Dawid–Skene over the
binarised labels: priors and each annotator's confusion matrix); `campaign_pairs.posterior`: each pair's
probability of its binary label as last computed. Existing campaigns get the default thresholds and no fit
(the vote share decides until the worker's first fit); their data is untouched.
"""
from alembic import op
import sqlalchemy as sa


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('campaigns', schema=None) as batch_op:
        batch_op.add_column(sa.Column('kappa_min', sa.Float(), nullable=False, server_default='0.2'))
        batch_op.add_column(sa.Column('reliability_min', sa.Float(), nullable=False, server_default='0.5'))
        batch_op.add_column(sa.Column('min_gold_checks', sa.Integer(), nullable=False, server_default='5'))
        batch_op.add_column(sa.Column('adaptive_fit', sa.JSON(), nullable=True))
    with op.batch_alter_table('campaign_pairs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('posterior', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('campaign_pairs', schema=None) as batch_op:
        batch_op.drop_column('posterior')
    with op.batch_alter_table('campaigns', schema=None) as batch_op:
        batch_op.drop_column('adaptive_fit')
        batch_op.drop_column('min_gold_checks')
        batch_op.drop_column('reliability_min')
        batch_op.drop_column('kappa_min')
