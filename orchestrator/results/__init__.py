"""The results database: every run and study cell a job measured, with its board, commit and figures
(SQLite by default, PostgreSQL for a team), and the history and baselines read from it."""
