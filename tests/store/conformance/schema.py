"""Migrations: a database made by the first schema upgrades to the last, and keeps working."""

from __future__ import annotations

import pytest

from signoff.store.schema import MIGRATIONS

from .harness import Base, Harness


class SchemaContract(Base):
    """Upgrades (``test_migrate_is_idempotent_and_records_versions`` is with the requests)."""

    def test_a_database_made_by_the_first_schema_upgrades(self, harness: Harness) -> None:
        if harness.made_by is None:
            pytest.skip("the harness cannot make a database at an older schema")
        old = harness.made_by(MIGRATIONS[:1])
        try:
            with harness.raw(old) as conn:
                assert conn.execute("SELECT COUNT(*) FROM counters").fetchone()[0] == 1
            assert old.migrate() == len(MIGRATIONS)
            with harness.raw(old) as conn:
                versions = [r[0] for r in conn.execute(
                    "SELECT version FROM signoff_migrations ORDER BY version").fetchall()]
                assert versions == list(range(1, len(MIGRATIONS) + 1))
                with pytest.raises(harness.undefined_table):
                    conn.execute("SELECT COUNT(*) FROM counters")
            with old.transaction() as tx:
                tx.append_audit("probe", at_us=1, request_id=None, actor=None, data={})
            event = list(old.audit_events())[-1]
            assert event.kind == "probe" and old.audit_head() == (event.index, event.hash)
            assert old.verify_audit().ok
        finally:
            old.close()
            drop = getattr(old, "drop_schema", None)
            if drop is not None:
                drop()
