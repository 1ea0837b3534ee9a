"""Opening the results database: a SQLite file (the default, in the user's data folder) or a PostgreSQL
server, through SQLAlchemy; the schema brought to the newest version by Alembic on the way in.

Writers never meet half-done: on SQLite every transaction begins IMMEDIATE (it takes the write lock at
once and waits up to a minute for it, instead of failing when two readers both try to write) and the file
is in WAL mode (readers go on while one writes); on PostgreSQL migrations take an advisory lock, and rows
go in one transaction per run.
"""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from ..errors import NothingStoredError, ResultsDatabaseError

MIGRATIONS = Path(__file__).with_name("migrations")
HEAD_REVISION = "0002"  # the newest migration's (a test holds it to Alembic's head): a database already there
#                         is opened without loading Alembic
BUSY_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 10  # a PostgreSQL server that does not answer: said after this, not waited for
# a connection's execution option: its transactions only read, so SQLite begins them deferred (no write lock)
READING = "orchestrate_reading"
MIGRATION_LOCK = 7_311_947  # the advisory lock key on PostgreSQL: any number of orchestrate's own


def data_folder() -> Path:
    """orchestrate's folder in the user's data folder ($XDG_DATA_HOME/orchestrate, else ~/.local/share/orchestrate):
    the default results database and warehouse live there."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "orchestrate"


def default_location() -> Path:
    """$ORCHESTRATE_DB's file, else results.db in the user's data folder ($XDG_DATA_HOME/orchestrate)."""
    return data_folder() / "results.db"


def database_url(given: str | None) -> str:
    """A SQLAlchemy URL from --db: a postgresql:// URL (psycopg is the driver), a sqlite:// URL, or a file
    path; nothing given means $ORCHESTRATE_DB, else the default file."""
    given = given or os.environ.get("ORCHESTRATE_DB") or str(default_location())
    if "://" not in given:
        return f"sqlite:///{Path(given).expanduser().resolve()}"
    for plain, driver in (("postgresql://", "postgresql+psycopg://"), ("postgres://", "postgresql+psycopg://")):
        if given.startswith(plain):
            return driver + given[len(plain):]
    return given


@dataclass
class Database:
    engine: Engine
    url: str

    @property
    def backend(self) -> str:
        return self.engine.dialect.name

    def describe(self) -> str:
        """The URL without its password, for messages."""
        return make_url(self.url).render_as_string(hide_password=True)

    def close(self) -> None:
        self.engine.dispose()


def open_database(given: str | None = None, migrate: bool = True, read_only: bool = False) -> Database:
    """The results database --db names. A writer creates and migrates it; a reader (``read_only``) never
    creates, migrates or writes anything: a missing database is said, not made. Either refuses, untouched,
    a file that is not a results database and one a newer orchestrate wrote."""
    try:
        url = database_url(given)
        parsed = make_url(url)
    except (ArgumentError, ValueError, RuntimeError):  # not a URL, a port that is not a number, '~nobody/x'
        raise ResultsDatabaseError(f"--db {given!r} is neither a file path nor a database URL",
                                   "give a path, sqlite:///PATH or postgresql://USER@HOST/DB") from None
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise ResultsDatabaseError(f"--db {backend!r}: only SQLite and PostgreSQL are supported",
                                   "give a path, sqlite:///PATH or postgresql://USER@HOST/DB")
    driver = parsed.get_driver_name()
    if driver not in SYNC_DRIVERS[backend]:
        raise ResultsDatabaseError(f"--db {parsed.drivername}: the driver {driver!r} is not one orchestrate uses",
                                   f"give {backend}:// and it uses {SYNC_DRIVERS[backend][0]}")
    memory = backend == "sqlite" and parsed.database in (None, "", ":memory:")
    if backend == "sqlite" and not memory:
        _check_sqlite_file(Path(parsed.database or ""), read_only)
    try:
        if backend == "sqlite":
            engine = _sqlite_engine(url, None if memory else parsed.database, read_only)
        else:
            connect_args: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT_S}
            if read_only:
                connect_args["options"] = "-c default_transaction_read_only=on"
            engine = create_engine(url, pool_pre_ping=True, connect_args=connect_args)
    except ImportError as exc:
        raise ResultsDatabaseError(f"--db {parsed.drivername}: its driver is not installed ({exc.name})",
                                   f"give {backend}:// and it uses {SYNC_DRIVERS[backend][0]}") from None
    database = Database(engine, url)
    try:
        with database.engine.connect() as connection:
            _check_revision(schema_revision(connection), database, read_only, read_only and backend == "postgresql")
        if migrate and not read_only:
            upgrade(database)
    except SQLAlchemyError as exc:
        database.close()
        raise ResultsDatabaseError(f"cannot open the results database {database.describe()}: "
                                   f"{_first_line(exc)}", "check --db (or $ORCHESTRATE_DB) and that the "
                                   "server is up") from None
    except ResultsDatabaseError:
        database.close()
        raise
    return database


STORE_FIRST = "store runs with 'orchestrate results import' or 'orchestrate ci'"
SYNC_DRIVERS = {"sqlite": ("pysqlite",), "postgresql": ("psycopg", "psycopg2")}


def _check_sqlite_file(path: Path, read_only: bool) -> None:
    """Before SQLAlchemy touches it: the file is there for a reader, and is a results database (or empty)
    for anyone. Looked at through a read-only connection, which writes nothing."""
    if path.is_dir():
        raise ResultsDatabaseError(f"--db {path} is a folder", "give the results database file's path")
    if not path.exists():
        if read_only:
            raise NothingStoredError(f"no results database at {path}", "give --db the database runs were stored "
                                       f"in, or {STORE_FIRST} first")
        return
    try:
        connection = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            revision = connection.execute("SELECT version_num FROM alembic_version").fetchone() \
                if "alembic_version" in tables else None
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise ResultsDatabaseError(f"--db {path} is not a results database ({exc})",
                                   "give the results database file's path") from None
    if tables and revision is None:
        raise ResultsDatabaseError(f"--db {path} is an SQLite file of something else (it has no orchestrate "
                                   "schema); it was left untouched", "give the results database file's path")
    if read_only and not tables:
        raise NothingStoredError(f"{path} holds no results yet", f"{STORE_FIRST} first")


def _check_revision(revision: str | None, database: Database, read_only: bool, must_exist: bool) -> None:
    """A schema a newer orchestrate wrote is refused: this one would misread it, or break it by migrating. A
    reader never migrates: an older schema is said, with how to bring it up to date."""
    if revision is None:
        if must_exist:
            raise NothingStoredError(f"{database.describe()} holds no results database yet",
                                       f"{STORE_FIRST} first")
        return
    if revision == HEAD_REVISION:
        return
    if revision not in revisions():
        raise ResultsDatabaseError(f"{database.describe()} was written by a newer orchestrate (schema {revision}; "
                                   f"this one knows up to {HEAD_REVISION}); it was left untouched",
                                   "upgrade orchestrate, or give another --db")
    if read_only:
        raise NothingStoredError(f"{database.describe()} has an older schema ({revision}; this orchestrate reads "
                                   f"{HEAD_REVISION}) and reading never migrates it",
                                   "any command that stores runs upgrades it: 'orchestrate results import' or 'ci'")


def _sqlite_engine(url: str, path: str | None, read_only: bool = False) -> Engine:
    if path and not read_only:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ResultsDatabaseError(f"cannot create the folder of {path}: {exc.strerror}",
                                       "give --db a path you can write") from None
    # a reader only reads (no migration, no WAL switch, no write lock) a file already checked to be a results
    # database; opened as usual, so that its last connection tidies the WAL files away as a writer's does
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # transactions are begun below, not by the driver
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        if path and not read_only:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        reading = read_only or connection.get_execution_options().get(READING, False)
        connection.exec_driver_sql("BEGIN" if reading else "BEGIN IMMEDIATE")

    return engine


def schema_revision(connection: Connection) -> str | None:
    """The schema version the database says it has (None when it has none yet), read without Alembic."""
    if not connection.dialect.has_table(connection, "alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def upgrade(database: Database, revision: str = "head") -> None:
    """Bring the schema to ``revision`` under a lock, so that two jobs opening a new database at once
    migrate it once."""
    if revision == "head":
        with database.engine.connect() as connection:
            if schema_revision(connection) == HEAD_REVISION:
                return
    from alembic import command
    with database.engine.begin() as connection:
        if database.backend == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        if revision == "head" and schema_revision(connection) == HEAD_REVISION:
            return  # another job migrated it while this one waited for the lock
        config = alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def downgrade(database: Database, revision: str) -> None:
    from alembic import command
    with database.engine.begin() as connection:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def alembic_config() -> Any:
    from alembic.config import Config
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def revisions() -> list[str]:
    """Every schema version, oldest first."""
    from alembic.script import ScriptDirectory
    script = ScriptDirectory.from_config(alembic_config())
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def _first_line(exc: BaseException) -> str:
    original = getattr(exc, "orig", None) or exc
    return (str(original).strip().splitlines() or [type(original).__name__])[0]
