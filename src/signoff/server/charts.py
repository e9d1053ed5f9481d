"""Charts drawn on the server: figures in, inline SVG markup out (the insights page).

No script draws them: each function returns the SVG as a string that renders as it is,
with JavaScript off and under the inbox's Content-Security-Policy (``style-src 'self'``
refuses ``style`` attributes, so colours and fonts are presentation attributes). Every
chart is ``role="img"`` with a ``<title>`` and an ``aria-label`` that say its figures in
words; the page gives the same figures as tables. Every text is escaped here, and a
character that would hide is drawn as a visible marker (``reveal_plain``): tool names
and thread ids are what agents sent.

The functions are pure (no I/O, no clock): ``columns`` (stacked vertical bars: asks per
day by tool), ``hbars`` (horizontal bars, stacked or grouped: per tool, per rule, per
risk) and ``spark`` (a row's small bars: a thread's asks per day).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from signoff.reveal import reveal_plain

# Distinct under the common colour-vision deficiencies well enough to tell neighbours
# apart; the legend and the tables carry the names in any case.
PALETTE = ("#0b5cad", "#e69f00", "#2e7d32", "#c62828", "#7b1fa2", "#00838f", "#8d6e63",
           "#ad1457")
OTHER = "#9aa1a9"
INK = "#1b1f23"
MUTED = "#586069"
GRID = "#e1e4e8"
FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif"
SIZE = 12  # the labels' font size; a character is about 0.6 of it wide
SUMMARY_ITEMS = 20  # items a summary names before "and N more"


@dataclass(frozen=True, slots=True)
class Series:
    """One kind of value a chart draws, in its colour (a legend entry)."""

    name: str
    colour: str


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar (or row): its label and a value per series, in the chart's series order;
    ``note``: what to write at its end (its total, by default)."""

    label: str
    values: tuple[float, ...]
    note: str | None = None
    detail: str | None = None  # the tooltip; by default the label and each series' value
    extra: Mapping[str, str] = field(default_factory=dict)  # attributes for the bar's <g>


def text(value: str) -> str:
    """``value`` escaped for SVG text or an attribute, hidden characters as markers."""
    return str(escape(reveal_plain(value)[0]))


def clip(value: str, chars: int) -> str:
    """``value`` cut to ``chars`` characters with ``…`` (before escaping)."""
    value = reveal_plain(value)[0]
    return value if len(value) <= chars else value[:max(1, chars - 1)] + "…"


def number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def nice(top: float) -> float:
    """A round top for an axis at or above ``top``: an even count up to 10 (the middle
    gridline is a whole number), then 1, 2 or 5 times a power of ten."""
    if top <= 10:
        return float(max(2, math.ceil(top) + math.ceil(top) % 2))
    power = 10 ** math.floor(math.log10(top))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= top))


def summary_of(title: str, items: Sequence[str]) -> str:
    """``title: a, b, c`` naming at most ``SUMMARY_ITEMS`` items."""
    shown = list(items[:SUMMARY_ITEMS])
    if len(items) > SUMMARY_ITEMS:
        shown.append(f"and {len(items) - SUMMARY_ITEMS} more")
    return f"{title}: " + ("; ".join(shown) if shown else "none")


def _open(width: float, height: float, summary: str, css: str) -> str:
    label = text(summary)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {css}" role="img" '
            f'aria-label="{label}" viewBox="0 0 {width:g} {height:g}" width="{width:g}" '
            f'height="{height:g}" font-family="{FONT}" font-size="{SIZE}" fill="{INK}">'
            f"<title>{label}</title>")


def _legend(series: Sequence[Series], width: float, y: float) -> tuple[list[str], float]:
    """Legend entries in rows across ``width`` from ``y``; the SVG and the height used."""
    out: list[str] = []
    x, row = 0.0, 0
    for one in series:
        name = clip(one.name, 40)
        span = 16 + len(name) * SIZE * 0.6 + 14
        if x and x + span > width:
            x, row = 0.0, row + 1
        top = y + row * 18
        out.append(f'<g class="legend-item"><rect x="{x:g}" y="{top + 2:g}" width="10" '
                   f'height="10" fill="{one.colour}"/><text x="{x + 14:g}" y="{top + 11:g}">'
                   f"{escape(name)}</text></g>")
        x += span
    return out, (row + 1) * 18 if series else 0


def _detail(bar: Bar, series: Sequence[Series], fmt: Callable[[float], str]) -> str:
    if bar.detail is not None:
        return bar.detail
    parts = [f"{s.name} {fmt(v)}" for s, v in zip(series, bar.values, strict=True) if v]
    return f"{bar.label}: " + (", ".join(parts) if parts else "0")


def _attrs(extra: Mapping[str, str]) -> str:
    return "".join(f' {name}="{escape(value)}"' for name, value in extra.items())


def columns(bars: Sequence[Bar], series: Sequence[Series], *, summary: str,
            width: float = 720, height: float = 220, css: str = "columns") -> Markup:
    """Vertical bars, one per ``bars`` entry left to right, each stacked by series (the
    first at the bottom), on an axis from 0; at most about eight labels under them."""
    legend, legend_h = _legend(series, width, 0) if len(series) > 1 else ([], 0.0)
    left, right, top_pad, bottom = 44.0, 8.0, legend_h + 10, 24.0
    total_h = height + top_pad + bottom
    plot_w, plot_h = width - left - right, height
    top = nice(max((sum(b.values) for b in bars), default=0))
    out = [_open(width, total_h, summary, css), *legend]
    for mark in (0.0, top / 2, top):  # gridlines with their values
        y = top_pad + plot_h - plot_h * mark / top
        out.append(f'<line x1="{left:g}" x2="{width - right:g}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="{GRID}"/><text x="{left - 6:g}" y="{y + 4:.1f}" '
                   f'text-anchor="end" fill="{MUTED}">{number(mark)}</text>')
    slot = plot_w / max(1, len(bars))
    gap = min(4.0, slot * 0.2)
    every = max(1, math.ceil(len(bars) / 8))
    for i, bar in enumerate(bars):
        x = left + i * slot + gap / 2
        base = top_pad + plot_h
        rects = []
        for one, value in zip(series, bar.values, strict=True):
            if value <= 0:
                continue
            h = plot_h * value / top
            base -= h
            rects.append(f'<rect x="{x:.2f}" y="{base:.2f}" width="{slot - gap:.2f}" '
                         f'height="{h:.2f}" fill="{one.colour}"/>')
        out.append(f'<g class="bar"{_attrs(bar.extra)}><title>'
                   f"{text(_detail(bar, series, number))}</title>{''.join(rects)}</g>")
        if i % every == 0:
            out.append(f'<text x="{x + (slot - gap) / 2:.1f}" y="{total_h - 8:g}" '
                       f'text-anchor="middle" fill="{MUTED}">{text(clip(bar.label, 12))}'
                       "</text>")
    out.append("</svg>")
    return Markup("".join(out))  # noqa: S704 (every text is escaped above)


def hbars(bars: Sequence[Bar], series: Sequence[Series], *, summary: str,
          stacked: bool = True, fmt: Callable[[float], str] = number, width: float = 720,
          label_chars: int = 28, css: str = "hbars") -> Markup:
    """Horizontal bars, one row per ``bars`` entry top to bottom, its label on the left
    and its note (or total) at its end; ``stacked``: the series end to end, else one
    thinner bar each (grouped), each with its value."""
    legend, legend_h = _legend(series, width, 0) if len(series) > 1 else ([], 0.0)
    left = min(width * 0.4, 8 + label_chars * SIZE * 0.6)
    room = 64.0  # for the note at a bar's end
    plot_w = width - left - room
    row_h = 22.0 if stacked or len(series) == 1 else 8.0 + 12.0 * len(series)
    top_pad = legend_h + 6
    height = top_pad + row_h * len(bars) + 4
    peak = max((sum(b.values) if stacked else max(b.values, default=0) for b in bars),
               default=0) or 1
    out = [_open(width, height, summary, css), *legend]
    for i, bar in enumerate(bars):
        y = top_pad + i * row_h
        shapes = [f'<text x="{left - 6:g}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end">'
                  f"{text(clip(bar.label, label_chars))}</text>"]
        if stacked or len(series) == 1:
            x = left
            for one, value in zip(series, bar.values, strict=True):
                if value <= 0:
                    continue
                w = plot_w * value / peak
                shapes.append(f'<rect x="{x:.2f}" y="{y + 3:.1f}" width="{w:.2f}" '
                              f'height="{row_h - 6:g}" fill="{one.colour}"/>')
                x += w
            note = bar.note if bar.note is not None else fmt(sum(bar.values))
            shapes.append(f'<text x="{x + 4:.1f}" y="{y + row_h / 2 + 4:.1f}" '
                          f'fill="{MUTED}">{text(note)}</text>')
        else:
            for j, (one, value) in enumerate(zip(series, bar.values, strict=True)):
                w = plot_w * value / peak
                top = y + 4 + j * 12
                shapes.append(f'<rect x="{left:g}" y="{top:.1f}" width="{w:.2f}" '
                              f'height="10" fill="{one.colour}"/><text x="{left + w + 4:.1f}" '
                              f'y="{top + 9:.1f}" fill="{MUTED}" font-size="10">'
                              f"{text(fmt(value))}</text>")
        out.append(f'<g class="bar"{_attrs(bar.extra)}><title>'
                   f"{text(_detail(bar, series, fmt))}</title>{''.join(shapes)}</g>")
    out.append("</svg>")
    return Markup("".join(out))  # noqa: S704 (every text is escaped above)


def spark(values: Sequence[tuple[str, float]], *, summary: str, width: float = 120,
          height: float = 24, colour: str = PALETTE[0]) -> Markup:
    """A row's small bars, left to right, on an axis from 0 to its own highest value
    (each bar's label and value are its tooltip)."""
    peak = max((v for _, v in values), default=0) or 1
    slot = width / max(1, len(values))
    gap = min(1.0, slot * 0.2)
    out = [_open(width, height, summary, "spark"),
           f'<line x1="0" x2="{width:g}" y1="{height - 0.5:g}" y2="{height - 0.5:g}" '
           f'stroke="{GRID}"/>']
    for i, (label, value) in enumerate(values):
        if value <= 0:
            continue
        h = max(1.0, (height - 2) * value / peak)
        out.append(f'<rect x="{i * slot + gap / 2:.2f}" y="{height - h:.2f}" '
                   f'width="{slot - gap:.2f}" height="{h:.2f}" fill="{colour}">'
                   f"<title>{text(f'{label}: {number(value)}')}</title></rect>")
    out.append("</svg>")
    return Markup("".join(out))  # noqa: S704 (every text is escaped above)
