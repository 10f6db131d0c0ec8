"""campaign pair selection and work distribution

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 04:00:00.000000

A campaign may take part of its datasets (`selection`: a range, gold-label and score filters, a
seeded sample; NULL = every pair) and says how its queue is shared (`distribution`): "share" gives
each pair its first annotator before any gets a second, "overlap" fills each pair's overlap before
the next. Campaigns created before keep the behaviour they had: "share" for the least-labelled
order (which already served the least-assigned pairs first), "overlap" for the others.
"""
from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('campaigns', schema=None) as batch_op:
        batch_op.add_column(sa.Column('selection', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('distribution', sa.String(length=20), nullable=False, server_default='share'))
    op.execute("UPDATE campaigns SET distribution = 'overlap' WHERE pair_order <> 'least_labelled'")


def downgrade() -> None:
    with op.batch_alter_table('campaigns', schema=None) as batch_op:
        batch_op.drop_column('distribution')
        batch_op.drop_column('selection')
