"""The embedded frontier: SQLite on local disk, for one process."""
