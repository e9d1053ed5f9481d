"""Ids sort by creation time, stay unguessable, and keep the 32-hex-digit shape."""

from __future__ import annotations

import re
import time

from signoff.ids import new_id


def test_ids_have_the_prefix_and_32_hex_digits() -> None:
    assert re.fullmatch(r"req_[0-9a-f]{32}", new_id("req_"))


def test_ids_made_in_later_milliseconds_sort_later() -> None:
    earlier = [new_id("req_") for _ in range(50)]
    time.sleep(0.002)
    later = [new_id("req_") for _ in range(50)]
    assert max(earlier) < min(later)


def test_ids_made_in_the_same_millisecond_still_differ() -> None:
    made = {new_id("dec_") for _ in range(10_000)}
    assert len(made) == 10_000


def test_the_time_part_is_the_unix_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    made = new_id("grant_")
    after = time.time_ns() // 1_000_000
    assert before <= int(made[len("grant_"):][:12], 16) <= after
