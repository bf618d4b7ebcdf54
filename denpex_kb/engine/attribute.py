"""Step 3, attribute: which rank and host printed a line, and when.

Everything here is driven by the rule pack's `globals` (line prefixes, rank markers, file-name
ranks, timestamp formats and torchelastic's ChildFailedError summary), so that another consumer
of the pack attributes lines the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

FLAGS = re.ASCII


@dataclass(frozen=True)
class Attribution:
    content: str  # the line without launcher prefixes
    prefix: str  # what was stripped
    rank: int | None
    rank_kind: str | None  # "global" or "local"
    host: str | None


class Attributor:
    def __init__(self, g: dict[str, Any]) -> None:
        self.prefixes = [
            (re.compile(p["pattern"], FLAGS), p["groups"], p["rank_kind"])
            for p in g["line_prefixes"]
        ]
        self.max_prefixes = g["max_prefixes_per_line"]
        self.markers = [(re.compile(p["pattern"], FLAGS), p["groups"]) for p in g["rank_markers"]]
        self.file_ranks = [
            (re.compile(p["pattern"], FLAGS), p["groups"], p["rank_kind"])
            for p in g["file_name_ranks"]
        ]
        self.timestamps = [(re.compile(p["pattern"], FLAGS), p["groups"]) for p in g["timestamps"]]

    def strip(self, text: str) -> Attribution:
        rank: int | None = None
        kind: str | None = None
        host: str | None = None
        pos = 0
        for _ in range(self.max_prefixes):
            rest = text[pos:]
            for rx, groups, rk in self.prefixes:
                m = rx.match(rest)
                if m and m.end() > 0:
                    if "rank" in groups and rank is None:
                        rank, kind = int(m.group(groups["rank"])), rk
                    if "host" in groups and host is None:
                        host = m.group(groups["host"])
                    pos += m.end()
                    break
            else:
                break
        content = text[pos:]
        if rank is None:
            for rx, groups in self.markers:
                m = rx.search(content)
                if m:
                    rank, kind = int(m.group(groups["rank"])), "global"
                    break
        return Attribution(content, text[:pos], rank, kind, host)

    def file_rank(self, name: str) -> tuple[int | None, str | None]:
        norm = name.replace("\\", "/")
        base = norm.rsplit("/", 1)[-1]
        for rx, groups, rk in self.file_ranks:
            m = rx.search(norm if "/" in rx.pattern else base)
            if m:
                return int(m.group(groups["rank"])), rk
        return None, None

    def timestamp(self, text: str, default_year: int | None) -> tuple[float | None, int | None]:
        """(sortable seconds, year seen) of the first timestamp in `text`, else (None, None)."""
        for rx, groups in self.timestamps:
            m = rx.search(text)
            if not m:
                continue

            def num(name: str, m: re.Match[str] = m, groups: dict[str, int] = groups) -> int:
                if name not in groups:
                    return 0
                v = m.group(groups[name])
                return int(v) if v else 0

            year = num("year") if "year" in groups else None
            y = year if year is not None else (default_year or 2000)
            frac_s = m.group(groups["fraction"]) if "fraction" in groups else None
            frac = float("0." + frac_s) if frac_s else 0.0
            days = _days(y, num("month"), num("day"))
            secs = days * 86400 + num("hour") * 3600 + num("minute") * 60 + num("second") + frac
            return secs, year
        return None, None


def _days(y: int, mo: int, d: int) -> int:
    """Days since 0000-03-01 (proleptic Gregorian), tolerant of out-of-range input."""
    mo = min(max(mo, 1), 12)
    if mo <= 2:
        y -= 1
        mo += 12
    return 365 * y + y // 4 - y // 100 + y // 400 + (153 * (mo - 3) + 2) // 5 + d


@dataclass
class ElasticItem:
    section: str  # "root_cause" or "failures"
    index: int
    line: int = 0
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    exitcode: int | None = None
    signal: str | None = None
    time: str | None = None
    error_file: str | None = None
    traceback: str | None = None


@dataclass
class ElasticSummary:
    """torchelastic's ChildFailedError block(s), parsed from the lines that the scan found."""

    items: list[ElasticItem] = field(default_factory=list)

    @property
    def root_causes(self) -> list[ElasticItem]:
        return [i for i in self.items if i.section == "root_cause"]


class ElasticParser:
    """Fed the hit lines of one source in order; the summary patterns are part of the scan."""

    def __init__(self, g: dict[str, Any], summary: ElasticSummary) -> None:
        p = g["elastic_summary"]["patterns"]
        self.rx = {k: re.compile(v, FLAGS) for k, v in p.items()}
        self.summary = summary
        self.section: str | None = None
        self.current: ElasticItem | None = None

    def feed(self, content: str, line: int) -> ElasticItem | None:
        """Update the state with one line; return the item this line belongs to, if any."""
        rx = self.rx
        if rx["root_cause_header"].match(content):
            self.section, self.current = "root_cause", None
            return None
        if rx["failures_header"].match(content):
            self.section, self.current = "failures", None
            return None
        if self.section is None:
            return None
        m = rx["item_start"].match(content)
        if m:
            self.current = ElasticItem(self.section, int(m.group(1)), line)
            self.summary.items.append(self.current)
            return self.current
        if rx["separator"].match(content):
            self.section = self.current = None if content.startswith("=") else self.section
            self.current = None
            return None
        cur = self.current
        if cur is None:
            return None
        if m := rx["field_rank"].match(content):
            cur.rank, cur.local_rank = int(m.group(1)), int(m.group(2))
        elif m := rx["field_host"].match(content):
            cur.host = m.group(1)
        elif m := rx["field_exitcode"].match(content):
            cur.exitcode, cur.signal = int(m.group(1)), m.group(3)
        elif m := rx["field_time"].match(content):
            cur.time = m.group(1).strip()
        elif m := rx["field_error_file"].match(content):
            cur.error_file = m.group(1).strip()
        elif m := rx["field_traceback"].match(content):
            cur.traceback = m.group(1).strip()
        return cur
