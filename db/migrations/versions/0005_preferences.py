"""preferences: a human choice between two candidate pairs of one source

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 04:00:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('preferences',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('pair_a_id', sa.Integer(), nullable=False),
    sa.Column('pair_b_id', sa.Integer(), nullable=False),
    sa.Column('preferred', sa.String(length=4), nullable=False),
    sa.Column('meta', sa.JSON(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['pair_a_id'], ['pairs.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['pair_b_id'], ['pairs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('preferences', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_preferences_dataset_id'), ['dataset_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_preferences_pair_a_id'), ['pair_a_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_preferences_pair_b_id'), ['pair_b_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('preferences', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_preferences_pair_b_id'))
        batch_op.drop_index(batch_op.f('ix_preferences_pair_a_id'))
        batch_op.drop_index(batch_op.f('ix_preferences_dataset_id'))

    op.drop_table('preferences')
