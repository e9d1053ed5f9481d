"""Times as people read and write them.

Shown: always in UTC and saying so (``2026-12-06 08:12 UTC``; ISO 8601 with ``Z`` for
machines), so a time read off the inbox, a terminal or a log on another machine means
the same moment to everyone. Read (every CLI time option): epoch seconds, an ISO 8601
date or time (UTC unless it names an offset), or an age back from now (``7d``,
``12h``, ``1h30m``); anything else is ``invalid_time``.
"""

from __future__ import annotations

import datetime as dt
import re

from signoff.errors import InvalidInput

TIME_HELP = ("epoch seconds, an ISO 8601 date or time (UTC unless it says: 2026-09-01, "
             "2026-09-01T12:00+02:00) or an age (90d, 12h, 30m: that long ago)")

_AGE = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_EPOCH = re.compile(r"^\d+(?:\.\d+)?$")
_LAST = 253402300799.0  # 9999-12-31T23:59:59Z: the last moment a date can name


def _moment(at: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(at, dt.UTC)


def shown(at: float, *, seconds: bool = False) -> str:
    """``2026-12-06 08:12 UTC`` (with ``:SS`` when ``seconds``)."""
    return _moment(at).strftime("%Y-%m-%d %H:%M:%S UTC" if seconds else "%Y-%m-%d %H:%M UTC")


def iso(at: float) -> str:
    """``2026-12-06T08:12:05Z``: for ``datetime`` attributes and machines."""
    return _moment(at).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(flag: str, text: str, *, now: float) -> float:
    """Epoch seconds for what ``flag`` was given (see the module's docstring)."""
    stamp = _read(text.strip(), now)
    if stamp is None or not -_LAST <= stamp <= _LAST:
        quoted = repr(text if len(text) <= 40 else text[:40] + "…")
        raise InvalidInput(f"{flag} {quoted} is not a time: give {TIME_HELP}",
                           code="invalid_time", field=flag)
    return stamp


def _read(value: str, now: float) -> float | None:
    if _EPOCH.match(value):
        return float(value)
    age = _AGE.match(value)
    if value and age is not None:
        days, hours, minutes, secs = (int(g) if g else 0 for g in age.groups())
        return now - (days * 86400 + hours * 3600 + minutes * 60 + secs)
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    try:
        return moment.timestamp()
    except (OverflowError, OSError, ValueError):
        return None
