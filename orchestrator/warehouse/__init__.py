"""The warehouse: every run's rows as Parquet, queried across runs with DuckDB."""
