"""people and roles: accounts, and who made each campaign, run, import and settings change

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25 21:30:00.000000

`accounts`: one row per person who signs in (db.accounts): a unique name (db.limits.clean_name), an optional
e-mail (the identity provider's, for OpenID Connect sign-in; stored lower-cased), a role (owner, organiser,
reviewer, viewer: lab.roles), a bcrypt password hash (None: no password yet, or provider sign-in
only), an invitation (the sha256 of a link's token, shown once, and when it stops working),
`session_epoch` (raised to end every session of the account at once: logging out everywhere, a changed
password, a changed role), `disabled_at` (cannot sign in; its decisions keep its name).
`activity`: who did what and when (a campaign's settings or guidelines saved, an account added...), for
the pages and the export. `created_by` on datasets (who imported), campaigns and score_runs: the account's
name, "" for rows from before accounts (nobody was recorded) and for a store used without accounts.
The adjudications' `reviewer` keeps the name it has; from now on it is the signed-in account's name.
No existing row changes otherwise; the configured admin password becomes the owner's account on the
first start (db.accounts.ensure_owner_from_admin_password), not here, since it lives in the configuration.
"""
from alembic import op
import sqlalchemy as sa


revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('accounts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('email', sa.String(length=320), nullable=True),
    sa.Column('role', sa.String(length=20), nullable=False),
    sa.Column('password_hash', sa.Text(), nullable=True),
    sa.Column('invite_hash', sa.String(length=64), nullable=True),
    sa.Column('invite_expires_at', sa.DateTime(), nullable=True),
    sa.Column('session_epoch', sa.Integer(), nullable=False, server_default='0'),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('created_by', sa.String(length=200), nullable=False, server_default=''),
    sa.Column('disabled_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', name='uq_accounts_name'),
    sa.UniqueConstraint('email', name='uq_accounts_email'),
    sa.UniqueConstraint('invite_hash', name='uq_accounts_invite_hash'),
    )
    op.create_table('activity',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(), nullable=False),
    sa.Column('actor', sa.String(length=200), nullable=False),
    sa.Column('action', sa.String(length=60), nullable=False),
    sa.Column('subject', sa.String(length=40), nullable=False),
    sa.Column('subject_id', sa.Integer(), nullable=True),
    sa.Column('summary', sa.Text(), nullable=False, server_default=''),
    sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_activity_subject', 'activity', ['subject', 'subject_id'], unique=False)
    for table in ('datasets', 'campaigns', 'score_runs'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('created_by', sa.String(length=200), nullable=False, server_default=''))


def downgrade() -> None:
    for table in ('score_runs', 'campaigns', 'datasets'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column('created_by')
    op.drop_index('ix_activity_subject', table_name='activity')
    op.drop_table('activity')
    op.drop_table('accounts')
