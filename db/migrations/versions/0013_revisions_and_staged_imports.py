"""revisions on a campaign's quality settings and guidelines; imports staged out of sight

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 18:40:00.000000

`campaigns.settings_revision`, `campaigns.guidelines_revision`: raised by every save of the quality
settings or the guidelines; a save from a form drawn at an older revision is refused (no lost update
between two organisers). `datasets.import_state`: None for a dataset everyone sees; "importing" while a
large import writes it in short transactions (no page, campaign or worker sees it until its last one);
`datasets.import_seen`: when such an import last wrote, so that one a crash left behind is removed.
`datasets.import_target`: the dataset an append lands in, when its last transaction moves the pairs there.
Existing rows get revision 0 and no import state: their data is untouched.
"""
from alembic import op
import sqlalchemy as sa


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('campaigns', schema=None) as batch_op:
        batch_op.add_column(sa.Column('settings_revision', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('guidelines_revision', sa.Integer(), nullable=False, server_default='0'))
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.add_column(sa.Column('import_state', sa.String(length=20), nullable=True))
        batch_op.add_column(sa.Column('import_seen', sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column('import_target', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('datasets', schema=None) as batch_op:
        batch_op.drop_column('import_target')
        batch_op.drop_column('import_seen')
        batch_op.drop_column('import_state')
    with op.batch_alter_table('campaigns', schema=None) as batch_op:
        batch_op.drop_column('guidelines_revision')
        batch_op.drop_column('settings_revision')
