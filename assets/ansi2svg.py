#!/usr/bin/env python3
"""Render a `tmux capture-pane -e -p` dump (text with SGR colour escapes) as SVG.

Used to produce assets/dashboard.svg from a real `claimtop --demo` run; see
assets/README.md. Standard library only, so regenerating the screenshot needs
nothing beyond python3 and tmux.

    python3 assets/ansi2svg.py assets/dashboard.ansi assets/dashboard.svg --cols 160 --rows 48
"""

import argparse
import html
import re
import sys
import unicodedata

CELL_W = 8.4  # DejaVu Sans Mono advance at 14px
CELL_H = 17.0
FONT_SIZE = 14
PAD = 12

# xterm's default 16-colour palette, a little softened for a dark page.
BASE16 = [
    "#1d1f21", "#cc6666", "#8abe5e", "#e6c06a", "#6d9fd6", "#b294bb", "#6bc1b8", "#c5c8c6",
    "#666a6e", "#ff7b7b", "#b5e37a", "#ffe08a", "#8fbfff", "#d7a8e0", "#8ae3da", "#ffffff",
]
DEFAULT_FG = "#d0d3d0"
DEFAULT_BG = "#16181a"

SGR = re.compile(r"\x1b\[([0-9;:]*)m")
OTHER_ESC = re.compile(r"\x1b(\[[0-9;?]*[A-Za-ln-z]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][A-Z0-9]|[=>])")


def xterm256(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (v, v, v)


class Style:
    __slots__ = ("fg", "bg", "bold", "dim", "italic", "underline", "reverse")

    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = None
        self.bg = None
        self.bold = self.dim = self.italic = self.underline = self.reverse = False

    def copy(self):
        s = Style()
        for k in Style.__slots__:
            setattr(s, k, getattr(self, k))
        return s

    def key(self):
        return tuple(getattr(self, k) for k in Style.__slots__)

    def colours(self):
        fg, bg = self.fg or DEFAULT_FG, self.bg or DEFAULT_BG
        if self.reverse:
            fg, bg = bg, fg
        return fg, bg

    def apply(self, params):
        codes = [int(p) if p.isdigit() else 0 for p in re.split("[;:]", params)] if params else [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                self.reset()
            elif c == 1:
                self.bold = True
            elif c == 2:
                self.dim = True
            elif c == 3:
                self.italic = True
            elif c == 4:
                self.underline = True
            elif c == 7:
                self.reverse = True
            elif c == 22:
                self.bold = self.dim = False
            elif c == 23:
                self.italic = False
            elif c == 24:
                self.underline = False
            elif c == 27:
                self.reverse = False
            elif 30 <= c <= 37:
                self.fg = BASE16[c - 30]
            elif 90 <= c <= 97:
                self.fg = BASE16[c - 90 + 8]
            elif c == 39:
                self.fg = None
            elif 40 <= c <= 47:
                self.bg = BASE16[c - 40]
            elif 100 <= c <= 107:
                self.bg = BASE16[c - 100 + 8]
            elif c == 49:
                self.bg = None
            elif c in (38, 48) and i + 1 < len(codes):
                colour, used = None, 1
                if codes[i + 1] == 5 and i + 2 < len(codes):
                    colour, used = xterm256(codes[i + 2]), 2
                elif codes[i + 1] == 2 and i + 4 < len(codes):
                    colour = "#%02x%02x%02x" % tuple(min(255, v) for v in codes[i + 2:i + 5])
                    used = 4
                if c == 38:
                    self.fg = colour
                else:
                    self.bg = colour
                i += used
            i += 1


def width(ch):
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def parse(text, cols, rows):
    """Lines of cells: each cell is (char, Style) or None for a wide char's tail."""
    grid = []
    for raw in text.split("\n")[:rows]:
        style = Style()
        cells = []
        pos = 0
        while pos < len(raw):
            m = SGR.match(raw, pos)
            if m:
                style.apply(m.group(1))
                pos = m.end()
                continue
            m = OTHER_ESC.match(raw, pos)
            if m:
                pos = m.end()
                continue
            ch = raw[pos]
            pos += 1
            w = width(ch)
            if w == 0 or ch in "\r\x1b":
                continue
            cells.append((ch, style.copy()))
            if w == 2:
                cells.append(None)
        # tmux trims trailing blanks; pad with the default style to the full width.
        while len(cells) < cols:
            cells.append((" ", Style()))
        grid.append(cells[:cols])
    while len(grid) < rows:
        grid.append([(" ", Style()) for _ in range(cols)])
    return grid


def runs(cells):
    """Group consecutive cells of one style: (start_col, text, style, span)."""
    out = []
    col = 0
    for c in cells:
        if c is None:
            if out:
                start, text, st, span = out[-1]
                out[-1] = (start, text, st, span + 1)
            col += 1
            continue
        ch, st = c
        if out and out[-1][2].key() == st.key() and out[-1][0] + out[-1][3] == col:
            start, text, _, span = out[-1]
            out[-1] = (start, text + ch, st, span + 1)
        else:
            out.append((col, ch, st, 1))
        col += 1
    return out


def render(grid, cols, rows, title):
    w = cols * CELL_W + 2 * PAD
    h = rows * CELL_H + 2 * PAD
    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.1f %.1f" role="img">'
        % (w, h, w, h),
        "<title>%s</title>" % html.escape(title),
        "<style>text{font-family:'DejaVu Sans Mono','Menlo','Consolas',monospace;font-size:%dpx;white-space:pre}"
        ".b{font-weight:bold}.i{font-style:italic}.u{text-decoration:underline}.d{opacity:.6}</style>"
        % FONT_SIZE,
        '<rect width="100%%" height="100%%" rx="6" fill="%s"/>' % DEFAULT_BG,
    ]
    for y, cells in enumerate(grid):
        top = PAD + y * CELL_H
        for start, text, st, span in runs(cells):
            _, bg = st.colours()
            if bg != DEFAULT_BG:
                parts.append(
                    '<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>'
                    % (PAD + start * CELL_W, top, span * CELL_W + 0.4, CELL_H + 0.4, bg)
                )
        baseline = top + CELL_H * 0.75
        for start, text, st, span in runs(cells):
            if not text.strip():
                continue
            fg, _ = st.colours()
            cls = " ".join(c for c, on in (("b", st.bold), ("i", st.italic), ("u", st.underline), ("d", st.dim)) if on)
            # textLength pins each run to its cells, so a fallback font with a
            # different advance cannot drift columns out of line.
            parts.append(
                '<text x="%.1f" y="%.1f" fill="%s"%s textLength="%.1f" lengthAdjust="spacingAndGlyphs" xml:space="preserve">%s</text>'
                % (
                    PAD + start * CELL_W,
                    baseline,
                    fg,
                    ' class="%s"' % cls if cls else "",
                    span * CELL_W,
                    html.escape(text),
                )
            )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input", help="capture-pane -e -p output ('-' for stdin)")
    ap.add_argument("output", help="SVG file to write ('-' for stdout)")
    ap.add_argument("--cols", type=int, default=160)
    ap.add_argument("--rows", type=int, default=48)
    ap.add_argument("--title", default="claimtop --demo")
    a = ap.parse_args()
    src = sys.stdin if a.input == "-" else open(a.input, encoding="utf-8", errors="replace")
    with src:
        text = src.read()
    svg = render(parse(text, a.cols, a.rows), a.cols, a.rows, a.title)
    if a.output == "-":
        sys.stdout.write(svg)
    else:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(svg)


if __name__ == "__main__":
    main()
