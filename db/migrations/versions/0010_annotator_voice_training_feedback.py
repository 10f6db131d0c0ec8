"""the annotator's voice (a comment and a flag with each answer) and feedback on training pairs

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 22:00:00.000000

A label may carry the annotator's comment (`labels.comment`, e.g. "typo in B") and a flag
(`labels.flagged`) that puts its pair in Review's queue. A training pair may carry the level the
organiser expects and a short explanation (`training_pairs.expected_level`, `explanation`), shown
to the annotator once they have answered it. Existing labels get no comment and no flag, existing
training pairs no feedback; their data is untouched.
"""
from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('labels', schema=None) as batch_op:
        batch_op.add_column(sa.Column('comment', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('flagged', sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table('training_pairs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('expected_level', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('explanation', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('training_pairs', schema=None) as batch_op:
        batch_op.drop_column('explanation')
        batch_op.drop_column('expected_level')
    with op.batch_alter_table('labels', schema=None) as batch_op:
        batch_op.drop_column('flagged')
        batch_op.drop_column('comment')
