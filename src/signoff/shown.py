"""The arguments hash an approver was shown, as a deciding surface sends it back.

A form field, a button's value or an API body carries it so that the decision
binds to what was shown (``Decision.expected_args_hash``). It is checked for
shape here, before it reaches the kernel, so that a forged one is a typed
refusal rather than text stored in a refusal's message.
"""

from __future__ import annotations

import re

from signoff.errors import InvalidInput

PATTERN = r"^sha256:[0-9a-f]{64}$"
_HASH = re.compile(PATTERN[1:-1])


def shown_hash(field: str, value: object) -> str:
    """``value`` if it is an arguments hash (``sha256:<64 hex>``); else ``InvalidInput``
    (code ``invalid_args_hash``)."""
    if type(value) is str and _HASH.fullmatch(value):
        return value
    raise InvalidInput(f"{field} must be the arguments hash that was shown "
                       "(sha256:<64 hex digits>)", code="invalid_args_hash", field=field)
