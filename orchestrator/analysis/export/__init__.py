"""Reading an export into arrays: its schema, its tables (through SQLite, or the b-tree reader), the names of its
processes, threads and calls, its samples and scheduling, and what the user asked to read of it."""
