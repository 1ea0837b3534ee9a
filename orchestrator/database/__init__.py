"""The results database, opened (SQLite for one machine, PostgreSQL for a team) and brought to its newest schema:
the runs and jobs the results keep, and the boards' leases and health that every run sharing it obeys."""
