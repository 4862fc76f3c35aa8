"""Where sessions are kept: the store protocol, the SQLite and PostgreSQL backends, the writer lease,
file checks, copying, following and read-only reading."""
