"""The insights page's charts (``signoff.server.charts``): pure functions, figures in, SVG
out — well-formed, labelled for screen readers, escaped, drawn to scale, and nothing a
Content-Security-Policy of ``style-src 'self'`` would drop."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from markupsafe import Markup

from signoff.server.charts import (
    SUMMARY_ITEMS,
    Bar,
    Series,
    columns,
    hbars,
    nice,
    spark,
    summary_of,
)
from signoff.server.insights import day_axis

SVG = "{http://www.w3.org/2000/svg}"
EVIL = '<script>alert("x")</script>'
TWO = [Series("execute", "#0b5cad"), Series("deploy", "#e69f00")]


def _parse(svg: Markup) -> ET.Element:
    """The chart as XML (it must be well-formed), checked for what every chart has."""
    assert isinstance(svg, Markup)
    root = ET.fromstring(str(svg))
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    title = root.find(f"{SVG}title")
    assert title is not None and title.text and root.get("aria-label") == title.text
    assert "style=" not in svg and "<script" not in svg and "javascript:" not in svg
    return root


def _rects(root: ET.Element) -> list[ET.Element]:
    return [r for g in root.iter(f"{SVG}g") if g.get("class") == "bar"
            for r in g.iter(f"{SVG}rect")]


def test_columns_stack_each_bar_to_scale() -> None:
    bars = [Bar("2026-01-01", (2.0, 1.0)), Bar("2026-01-02", (0.0, 0.0)),
            Bar("2026-01-03", (2.0, 0.0))]
    root = _parse(columns(bars, TWO, summary="Asks per day: 5 in all"))
    assert root.get("aria-label") == "Asks per day: 5 in all"
    groups = [g for g in root.iter(f"{SVG}g") if g.get("class") == "bar"]
    assert len(groups) == 3  # an empty day is a bar too, with nothing drawn
    assert [len(list(g.iter(f"{SVG}rect"))) for g in groups] == [2, 0, 1]
    assert [g.findtext(f"{SVG}title") for g in groups] == [
        "2026-01-01: execute 2, deploy 1", "2026-01-02: 0", "2026-01-03: execute 2"]
    heights = [float(r.get("height", 0)) for r in _rects(root)]
    assert heights[0] == pytest.approx(2 * heights[1], rel=1e-3) == pytest.approx(
        heights[2], rel=1e-3)
    legend = [t.text for g in root.iter(f"{SVG}g") if g.get("class") == "legend-item"
              for t in g.iter(f"{SVG}text")]
    assert legend == ["execute", "deploy"]
    assert {t.text for t in root.iter(f"{SVG}text")} >= {"0", "2", "4", "2026-01-01"}


def test_hbars_stacked_and_grouped() -> None:
    answers = [Series("approved", "#0"), Series("rejected", "#1")]
    root = _parse(hbars([Bar("ask-push", (3.0, 1.0), note="4 asks"), Bar("(gated)", (0.0, 2.0))],
                        answers, summary="Rules"))
    widths = [float(r.get("width", 0)) for r in _rects(root)]
    assert widths[0] == pytest.approx(3 * widths[1], rel=1e-3) == pytest.approx(
        1.5 * widths[2], rel=1e-3)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "4 asks" in texts and "2" in texts and "ask-push" in texts
    waits = [Series("median", "#0"), Series("p90", "#1")]
    grouped = _parse(hbars([Bar("high", (10.0, 100.0))], waits, summary="Waits",
                           stacked=False, fmt=lambda v: f"{v:.0f}s"))
    median, p90 = (float(r.get("width", 0)) for r in _rects(grouped))
    assert p90 == pytest.approx(10 * median, rel=1e-3)
    assert {"10s", "100s"} <= {t.text for t in grouped.iter(f"{SVG}text")}


def test_spark_draws_the_days_with_asks() -> None:
    root = _parse(spark([("2026-01-01", 3.0), ("2026-01-02", 0.0), ("2026-01-03", 1.0)],
                        summary="Thread t1: 4 asks"))
    rects = list(root.iter(f"{SVG}rect"))
    assert [r.findtext(f"{SVG}title") for r in rects] == ["2026-01-01: 3", "2026-01-03: 1"]
    heights = [float(r.get("height", 0)) for r in rects]
    assert heights[0] == pytest.approx(3 * heights[1], rel=1e-3)  # drawn to 0.01 px


def test_agent_supplied_text_is_escaped_and_hidden_characters_shown() -> None:
    hidden = "deploy\u202eyolp"
    for svg in (columns([Bar(EVIL, (1.0, 1.0))], [Series(EVIL, "#0"), Series(hidden, "#1")],
                        summary=f"by tool: {EVIL} 1"),
                hbars([Bar(EVIL, (1.0,)), Bar(hidden, (1.0,))], [Series("asks", "#0")],
                      summary=f"{EVIL} 1, {hidden} 1"),
                spark([(EVIL, 1.0)], summary=f"Thread {EVIL}")):
        root = _parse(svg)  # parses: nothing broke out of a text or an attribute
        assert "<script" not in svg and "&lt;script&gt;" in svg
        assert not [e for e in root.iter() if e.tag.endswith("script")]
        assert "\u202e" not in svg
    shown = str(hbars([Bar(hidden, (1.0,))], [Series("asks", "#0")], summary=hidden))
    assert "U+202E right-to-left override" in shown


def test_long_labels_are_cut_and_empty_charts_draw() -> None:
    root = _parse(hbars([Bar("t" * 300, (1.0,))], [Series("asks", "#0")], summary="x",
                        label_chars=20))
    label = next(t.text for t in root.iter(f"{SVG}text") if t.text and t.text.startswith("t"))
    assert label == "t" * 19 + "…"
    _parse(columns([], TWO, summary="nothing"))
    _parse(hbars([], TWO, summary="nothing"))
    _parse(spark([], summary="nothing"))


@pytest.mark.parametrize(("top", "axis"), [(0, 2), (1, 2), (3, 4), (7, 8), (10, 10),
                                           (11, 20), (101, 200), (1000, 1000), (2500, 5000)])
def test_the_axis_ends_on_a_round_number(top: float, axis: float) -> None:
    assert nice(top) == axis


def test_a_summary_names_at_most_twenty_items() -> None:
    items = [f"tool{i} 1" for i in range(SUMMARY_ITEMS + 5)]
    said = summary_of("Asks per tool", items)
    assert said.startswith("Asks per tool: tool0 1; tool1 1") and said.endswith("and 5 more")
    assert summary_of("Asks per tool", []) == "Asks per tool: none"


def test_the_day_axis_fills_gaps_and_buckets_long_spans() -> None:
    assert day_axis([]) == []
    assert day_axis(["2026-01-03", "2026-01-01"]) == [["2026-01-01"], ["2026-01-02"],
                                                      ["2026-01-03"]]
    year = day_axis(["2025-01-01", "2025-12-31"])
    assert len(year) == 92 and {len(b) for b in year[:-1]} == {4}  # 365 days, 4 to a bar
    assert sum(len(b) for b in year) == 365 and year[0][0] == "2025-01-01"
    assert year[-1][-1] == "2025-12-31"
