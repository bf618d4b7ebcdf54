"""The fleet aggregates as Markdown and as one self-contained HTML page (inline CSS and SVG
charts, no script, no font or image from anywhere: a Content-Security-Policy forbids it)."""

from __future__ import annotations

from html import escape
from typing import Any

COLOURS = {
    "confident": "#2e7d32",
    "differential": "#f9a825",
    "probable": "#ef6c00",
    "none": "#9e9e9e",
    "errors": "#b71c1c",
}
SERIES = ("confident", "differential", "probable", "none", "errors")


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _cs(row: dict[str, Any], key: str) -> str:
    """A count with its share of the row's analysed jobs."""
    return f"{row[key]} ({_pct(row['shares'][key])})"


def _md_cell(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def render_markdown(agg: dict[str, Any], title: str = "Fleet report") -> str:
    out = [f"# {title}", ""]
    v, sh = agg["verdicts"], agg["shares"]
    out.append(
        f"{agg['jobs']} job(s), {agg['analysed_ok']} analysed, {len(agg['errors'])} unreadable. "
        + ", ".join(f"{k} {v[k]} ({_pct(sh[k])})" for k in v)
        + f". Catch-all (errors no entry knows, no diagnosis): {agg['catch_all']} "
        f"({_pct(agg['catch_all_share'])})."
    )
    out.append("")
    for key, name in (("by_week", "Per week"), ("by_day", "Per day")):
        out += [
            f"## {name}",
            "",
            "| period | jobs | confident | differential | probable | none "
            "| catch-all | errors | top root causes |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in agg[key]:
            top = ", ".join(f"{i} ({n})" for i, n in r["top"])
            out.append(
                f"| {r['period']} | {r['jobs']} | {_cs(r, 'confident')} | {_cs(r, 'differential')} | "
                f"{_cs(r, 'probable')} | {_cs(r, 'none')} | {_cs(r, 'catch_all')} | {r['errors']} | "
                f"{_md_cell(top)} |"
            )
        out.append("")
    out += [
        "## Per phase",
        "",
        "| phase | jobs | confident | differential | probable |",
        "|---|---|---|---|---|",
    ]
    for r in agg["by_phase"]:
        out.append(
            f"| {r['phase']} | {r['jobs']} | {r['confident']} | {r['differential']} | "
            f"{r['probable']} |"
        )
    out += [
        "",
        "## Root causes",
        "",
        "| entry | phase | jobs | confident | differential | probable |",
        "|---|---|---|---|---|---|",
    ]
    for c in agg["root_causes"]:
        out.append(
            f"| `{c['id']}` | {c['phase']} | {c['jobs']} | {c['confident']} | "
            f"{c['differential']} | {c['probable']} |"
        )
    out += [
        "",
        f"## Suspect nodes (hardware or interconnect failures started there in "
        f"{agg['suspect_min_jobs']}+ jobs)",
        "",
    ]
    if not agg["suspect_nodes"]:
        out.append("None.")
    for h in agg["suspect_nodes"]:
        ents = ", ".join(f"`{k}` ({n})" for k, n in h["entries"].items())
        out.append(
            f"- **{_md_cell(h['host'])}**: {h['job_count']} jobs ({ents}): "
            + ", ".join(_md_cell(j) for j in h["jobs"])
        )
        for e in h["evidence"][:3]:
            out.append(
                f"  - `{_md_cell(e['job'])}` {_md_cell(e['file'])}:{e['line']}: "
                f"`{_md_cell(e['text'])[:300]}`"
            )
    out += ["", "## Unknown errors, clustered (the work list for new entries)", ""]
    if not agg["unknown_clusters"]:
        out.append("None.")
    else:
        out += ["| jobs | lines | normalised error | example |", "|---|---|---|---|"]
        for c in agg["unknown_clusters"][:50]:
            ex = c["examples"][0]
            out.append(
                f"| {c['job_count']} | {c['lines']} | `{_md_cell(c['pattern'])[:300]}` | "
                f"{_md_cell(ex['job'])}:{ex['line']} |"
            )
    out += ["", "## Failures seen only on some versions", ""]
    any_v = False
    for pkg, rows in agg["version_only_failures"].items():
        for r in rows:
            any_v = True
            seen = ", ".join(f"{k} ({n})" for k, n in sorted(r["seen_on"].items()))
            never = ", ".join(f"{k} ({n} jobs)" for k, n in sorted(r["never_on"].items()))
            out.append(f"- {pkg}: `{r['id']}` on {seen}; never on {never}")
    if not any_v:
        out.append("None.")
    if agg["errors"]:
        out += ["", "## Jobs that could not be analysed", ""]
        out += [f"- {_md_cell(e['job'])}: {_md_cell(e['error'])}" for e in agg["errors"]]
    out.append("")
    return "\n".join(out)


# --- HTML -------------------------------------------------------------------------------------
CSS = """
:root { --primary: #3f51b5; --accent: #ff5722; --fg: #212121; --muted: #616161; --line: #e0e0e0; }
* { box-sizing: border-box; }
body { margin: 0; font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, Helvetica,
  Arial, sans-serif; color: var(--fg); background: #fff; font-size: 15px; line-height: 1.5; }
header { background: var(--primary); color: #fff; padding: .8rem 1.6rem; font-size: 1.1rem;
  font-weight: 600; box-shadow: 0 2px 4px rgba(0,0,0,.2); }
header small { font-weight: 400; opacity: .8; margin-left: .8rem; }
main { max-width: 72rem; margin: 0 auto; padding: 1rem 1.6rem 3rem; }
h2 { font-weight: 400; color: var(--primary); border-bottom: 1px solid var(--line);
  padding-bottom: .2rem; margin-top: 2rem; }
.tiles { display: flex; flex-wrap: wrap; gap: .8rem; }
.tile { border: 1px solid var(--line); border-radius: .3rem; padding: .5rem .9rem; min-width: 9rem; }
.tile b { display: block; font-size: 1.4rem; }
.tile.watch { border-left: .25rem solid var(--accent); }
table { border-collapse: collapse; width: 100%; font-size: .85rem; margin: .6rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .5rem; text-align: left;
  vertical-align: top; }
th { background: #f5f5f5; font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
code { font-family: SFMono-Regular, Consolas, Menlo, monospace; font-size: .8rem;
  background: #f5f5f5; padding: 0 .2rem; border-radius: .15rem; overflow-wrap: anywhere; }
.legend span { display: inline-block; margin-right: 1rem; font-size: .8rem; }
.legend i { display: inline-block; width: .8rem; height: .8rem; margin-right: .3rem;
  vertical-align: -.1rem; }
.muted { color: var(--muted); }
svg text { font-family: inherit; font-size: 11px; fill: #424242; }
"""


def _legend() -> str:
    return (
        '<p class="legend">'
        + "".join(f'<span><i style="background:{COLOURS[s]}"></i>{s}</span>' for s in SERIES)
        + "</p>"
    )


def _counts(r: dict[str, Any]) -> list[tuple[str, int]]:
    return [(s, r.get(s, 0) if s != "errors" else r.get("errors", 0)) for s in SERIES]


def svg_columns(rows: list[dict[str, Any]], label: str = "period") -> str:
    """Stacked columns, one per row, of the verdict counts (and unreadable jobs)."""
    if not rows:
        return '<p class="muted">No jobs.</p>'
    h, top, bottom, left = 180, 10, 64, 36
    bw = max(8, min(48, 680 // max(1, len(rows)) - 6))
    w = left + len(rows) * (bw + 6) + 10
    peak = max(sum(n for _, n in _counts(r)) for r in rows) or 1
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h + top + bottom}" '
        f'role="img" aria-label="verdicts per {escape(label)}">'
    ]
    parts.append(f'<text x="2" y="{top + 8}">{peak}</text><text x="2" y="{top + h}">0</text>')
    parts.append(f'<line x1="{left - 4}" y1="{top + h}" x2="{w}" y2="{top + h}" stroke="#bdbdbd"/>')
    for i, r in enumerate(rows):
        x = left + i * (bw + 6)
        y = top + h
        for s, n in _counts(r):
            if not n:
                continue
            bh = h * n / peak
            y -= bh
            parts.append(
                f'<rect x="{x}" y="{y:.1f}" width="{bw}" height="{bh:.1f}" fill="{COLOURS[s]}">'
                f"<title>{escape(str(r[label]))}: {n} {s}</title></rect>"
            )
        if len(rows) <= 16 or i % max(1, len(rows) // 12) == 0:
            parts.append(
                f'<text x="{x}" y="{top + h + 14}" transform="rotate(30 {x} {top + h + 14})">'
                f"{escape(str(r[label]))}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def svg_bars(rows: list[dict[str, Any]], key: str) -> str:
    """Horizontal stacked bars (verdict counts) per phase."""
    if not rows:
        return '<p class="muted">No diagnoses.</p>'
    bh, left, width = 18, 150, 520
    peak = max(r["jobs"] for r in rows) or 1
    hgt = len(rows) * (bh + 6) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 60}" height="{hgt}" '
        f'role="img" aria-label="verdicts per {escape(key)}">'
    ]
    for i, r in enumerate(rows):
        y = 4 + i * (bh + 6)
        parts.append(f'<text x="0" y="{y + 13}">{escape(str(r[key]))}</text>')
        x = float(left)
        for s in SERIES[:4]:
            n = r.get(s, 0)
            if not n:
                continue
            bw = width * n / peak
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{bw:.1f}" height="{bh}" '
                f'fill="{COLOURS[s]}"><title>{escape(str(r[key]))}: {n} {s}</title></rect>'
            )
            x += bw
        parts.append(f'<text x="{x + 4:.1f}" y="{y + 13}">{r["jobs"]}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(head: list[str], body: list[list[str]], numeric: set[int] = frozenset()) -> str:  # type: ignore[assignment]
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    trs = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in body
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def render_html(
    agg: dict[str, Any], title: str = "denpex-kb fleet report", hub: str | None = None
) -> str:
    """The page; with `hub` (the docs hub's base URL, e.g. file:///.../site/), root-cause ids
    link to their entry pages (links only: nothing is loaded from there)."""
    e = escape

    def entry(c: dict[str, Any]) -> str:
        code = f"<code>{e(c['id'])}</code>"
        if hub and c.get("url"):
            return f'<a href="{e(hub + c["url"])}">{code}</a>'
        return code

    v, sh = agg["verdicts"], agg["shares"]
    tiles = [f'<div class="tile"><b>{agg["jobs"]}</b>jobs</div>']
    tiles += [f'<div class="tile"><b>{_pct(sh[k])}</b>{k} ({v[k]})</div>' for k in v]
    tiles.append(
        f'<div class="tile watch"><b>{_pct(agg["catch_all_share"])}</b>catch-all: '
        f"unknown errors, no diagnosis ({agg['catch_all']})</div>"
    )
    tiles.append(f'<div class="tile"><b>{len(agg["errors"])}</b>unreadable</div>')
    sec = [f'<div class="tiles">{"".join(tiles)}</div>']
    sec.append("<h2>Verdicts per week</h2>" + _legend() + svg_columns(agg["by_week"]))
    sec.append("<h2>Verdicts per day</h2>" + svg_columns(agg["by_day"]))
    sec.append(
        _table(
            [
                "day",
                "jobs",
                "confident",
                "differential",
                "probable",
                "none",
                "catch-all",
                "errors",
                "top root causes",
            ],
            [
                [
                    e(r["period"]),
                    str(r["jobs"]),
                    _cs(r, "confident"),
                    _cs(r, "differential"),
                    _cs(r, "probable"),
                    _cs(r, "none"),
                    _cs(r, "catch_all"),
                    str(r["errors"]),
                    ", ".join(f"<code>{e(i)}</code> {n}" for i, n in r["top"]),
                ]
                for r in agg["by_day"]
            ],
            {1, 2, 3, 4, 5, 6, 7},
        )
    )
    sec.append("<h2>Per phase</h2>" + svg_bars(agg["by_phase"], "phase"))
    sec.append(
        "<h2>Root causes</h2>"
        + _table(
            ["entry", "title", "phase", "jobs", "confident", "differential", "probable"],
            [
                [
                    entry(c),
                    e(c["title"] or ""),
                    e(c["phase"] or ""),
                    str(c["jobs"]),
                    str(c["confident"]),
                    str(c["differential"]),
                    str(c["probable"]),
                ]
                for c in agg["root_causes"]
            ],
            {3, 4, 5, 6},
        )
    )
    sec.append(
        f'<h2>Suspect nodes</h2><p class="muted">Hosts where a hardware or interconnect '
        f"failure started in {agg['suspect_min_jobs']} or more jobs: the drain list.</p>"
    )
    sec.append(
        _table(
            ["host", "jobs", "failures", "evidence"],
            [
                [
                    f"<b>{e(h['host'])}</b>",
                    str(h["job_count"]),
                    ", ".join(f"<code>{e(k)}</code> {n}" for k, n in h["entries"].items()),
                    "<br>".join(
                        f"{e(x['job'])} {e(str(x['file']))}:{x['line']}: <code>{e(str(x['text'])[:300])}</code>"
                        for x in h["evidence"][:4]
                    ),
                ]
                for h in agg["suspect_nodes"]
            ],
            {1},
        )
        if agg["suspect_nodes"]
        else '<p class="muted">None.</p>'
    )
    sec.append(
        '<h2>Unknown errors, clustered</h2><p class="muted">Error lines no entry '
        "recognises, with times, ids, paths and numbers masked, ranked by jobs.</p>"
    )
    sec.append(
        _table(
            ["jobs", "lines", "normalised error", "examples"],
            [
                [
                    str(c["job_count"]),
                    str(c["lines"]),
                    f"<code>{e(c['pattern'][:400])}</code>",
                    "<br>".join(
                        f"{e(x['job'])}:{x['line']} <code>{e(str(x['text'])[:200])}</code>"
                        for x in c["examples"]
                    ),
                ]
                for c in agg["unknown_clusters"][:100]
            ],
            {0, 1},
        )
        if agg["unknown_clusters"]
        else '<p class="muted">None.</p>'
    )
    vrows = [
        [
            e(pkg),
            f"<code>{e(r['id'])}</code>",
            ", ".join(f"{e(k)} ({n})" for k, n in sorted(r["seen_on"].items())),
            ", ".join(f"{e(k)} ({n} jobs)" for k, n in sorted(r["never_on"].items())),
        ]
        for pkg, rows in agg["version_only_failures"].items()
        for r in rows
    ]
    sec.append(
        "<h2>Failures seen only on some versions</h2>"
        + (
            _table(["package", "root cause", "seen on (jobs)", "never on"], vrows)
            if vrows
            else '<p class="muted">None.</p>'
        )
    )
    if agg["errors"]:
        sec.append(
            "<h2>Jobs that could not be analysed</h2>"
            + _table(["job", "error"], [[e(x["job"]), e(str(x["error"]))] for x in agg["errors"]])
        )
    packs = ", ".join(p[:12] for p in agg["packs"])
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>"
        f"<header>{e(title)}<small>rule pack {e(packs)}</small></header><main>"
        + "".join(sec)
        + "</main></body></html>\n"
    )
