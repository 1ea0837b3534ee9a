"""Alembic's environment: migrations run on the connection ``database.migrate`` hands over (under its lock),
or on ``sqlalchemy.url`` from the command line (``alembic -x url=...``)."""
from alembic import context
from sqlalchemy import create_engine

from orchestrator.database.schema import metadata

config = context.config


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("give the database: alembic -x url=sqlite:///PATH (or postgresql+psycopg://...)")
    engine = create_engine(url)
    with engine.begin() as own:
        context.configure(connection=own, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run()
