"""The store contract's conformance suite: one class a backend's tests subclass.

Every test here runs against any store the harness gives (docs/architecture.md, "The
store contract"; docs/internals/store.md, "Running the conformance suite"). Nothing
mocks a store: rows go into the database and come back out, and the database itself is
asked to refuse what it must. A backend runs it by subclassing ``StoreContract`` in a
test module and supplying a ``harness`` fixture (``Harness``)::

    class TestMyStore(StoreContract):
        @pytest.fixture
        def harness(self, tmp_path):
            store = MyStore(tmp_path / "db")
            yield Harness(store=store, twin=lambda s: MyStore(s.path))
            store.close()

``tests/store/test_conformance.py`` runs it for SQLite and PostgreSQL.
"""

from __future__ import annotations

from .audit import AuditContract
from .capabilities import CapabilitiesContract
from .harness import Harness
from .memory import MemoryContract
from .requests import RequestsContract
from .schema import SchemaContract
from .waking import WakingContract

__all__ = ["Harness", "StoreContract"]


class StoreContract(RequestsContract, AuditContract, MemoryContract, WakingContract,
                    SchemaContract, CapabilitiesContract):
    """The whole contract: subclass it as ``Test…`` and define the ``harness`` fixture."""
