"""Storage: one ``Store`` contract (``base``), on SQLite (the embedded default) and
PostgreSQL (several servers), with the audit chain sealed after commit on PostgreSQL."""
