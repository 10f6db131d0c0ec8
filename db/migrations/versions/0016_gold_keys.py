"""gold keys that say where they came from, and keys that accept the adjacent level

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-07 04:00:00.000000

`gold_pairs.accept_adjacent`: the key also accepts the level next to its own (a graded key whose neighbour
is a fair answer; pluie_core.quality.accepted). `gold_pairs.reference_score`: the dataset's graded gold
score the key was derived from (None for a binary label or a key set by hand). `gold_pairs.derivation`: how
the key was made, in words (the rule of pluie_core.quality.key_rule_text and the dataset, or "set by
id"), for the Live campaign page and the dataset card. Existing keys keep their answer, accept only it,
and read "set before keys recorded their origin".
"""
from alembic import op
import sqlalchemy as sa


revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('gold_pairs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('accept_adjacent', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('reference_score', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('derivation', sa.String(length=300), nullable=False,
                                      server_default='set before keys recorded their origin'))


def downgrade() -> None:
    with op.batch_alter_table('gold_pairs', schema=None) as batch_op:
        batch_op.drop_column('derivation')
        batch_op.drop_column('reference_score')
        batch_op.drop_column('accept_adjacent')
