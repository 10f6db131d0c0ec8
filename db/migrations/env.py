"""Alembic environment: the engine comes from db.engine (config.attributes) or the usual URL setting."""

from alembic import context

from db.engine import make_engine
from db.models import Base

config = context.config
engine = config.attributes.get("engine") or make_engine()

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite needs table copies to alter
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
    if connection.in_transaction():
        connection.commit()
