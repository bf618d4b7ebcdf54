"""Step 3, attribute: which rank and host printed a line, and when.

Everything here is driven by the rule pack's `globals` (line prefixes, rank markers, file-name
ranks, timestamp formats and torchelastic's ChildFailedError summary), so that another consumer
of the pack attributes lines the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import re2

MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}
LOOKBACK_BYTES = 8192


def compile_rx(pattern: str | bytes):  # noqa: ANN201 - re2._Regexp
    """Every pattern run on log text is compiled with RE2: linear time whatever the line (RE2's
    digit, word and space classes are ASCII-only, as the pack's dialect requires)."""
    opts = re2.Options()
    opts.log_errors = False
    return re2.compile(pattern, opts)


@dataclass(frozen=True)
class Attribution:
    content: str  # the line without launcher prefixes
    prefix: str  # what was stripped
    rank: int | None
    rank_kind: str | None  # "global" or "local"
    host: str | None
    rank_via: str | None = None  # "prefix" or "marker"


@dataclass(frozen=True)
class Process:
    """What a `globals.process_lines` pattern found on a line."""

    pattern: str  # the pattern's id
    subject: str  # "self" (the printing process) or "other" (a process the line is about)
    pid: int
    host: str | None  # the pattern's own host group (NCCL's hostname), else None
    device: int | None
    rank: int | None  # the pattern's rank group (a launcher's spawn line), else None
    rank_kind: str | None


def short_host(host: str | None) -> str | None:
    """Host names compare by their first dot-separated label (NCCL cuts its hostname there)."""
    return host.split(".", 1)[0] if host else host


class Patterns:
    """A list of patterns compiled with RE2 over UTF-8 bytes, tested together by one RE2 set:
    only the patterns the set reports are run again, for their groups. (The RE2 Python
    wrapper costs tens of microseconds per call on `str`; one set call over bytes costs a few.)
    """

    def __init__(self, patterns: list[str]) -> None:
        self.rx = [compile_rx(p.encode()) for p in patterns]
        opts = re2.Options()
        opts.log_errors = False
        self._set = re2.Set.SearchSet(opts)
        for p in patterns:
            self._set.Add(p.encode())
        self._set.Compile()

    def found(self, data: bytes) -> list[int]:
        """Indices, in pattern order, of the patterns found in `data`."""
        if not self.rx:
            return []
        return sorted(self._set.Match(data) or ())

    def first(self, data: bytes) -> tuple[int, Any] | None:
        """(index, match) of the first pattern in order that is found in `data`."""
        for i in self.found(data):
            m = self.rx[i].search(data)
            if m is not None:
                return i, m
        return None


def _str(m: Any, group: int) -> str | None:
    v = m.group(group)
    return v.decode("utf-8", "replace") if v is not None else None


class Attributor:
    def __init__(self, g: dict[str, Any]) -> None:
        lp = g["line_prefixes"]
        self.prefixes = Patterns([p["pattern"] for p in lp])
        self.prefix_meta = [(p["groups"], p["rank_kind"], p.get("level", 0)) for p in lp]
        self.max_prefixes = g["max_prefixes_per_line"]
        self.innermost = g.get("prefix_rank", "outermost") == "innermost"
        self.markers = Patterns([p["pattern"] for p in g["rank_markers"]])
        self.marker_groups = [p["groups"] for p in g["rank_markers"]]
        self.file_ranks = [
            (compile_rx(p["pattern"]), p["groups"], p["rank_kind"], "/" in p["pattern"])
            for p in g["file_name_ranks"]
        ]
        self.timestamps = Patterns([p["pattern"] for p in g["timestamps"]])
        self.timestamp_groups = [p["groups"] for p in g["timestamps"]]
        procs = g.get("process_lines", [])
        self.processes = Patterns([p["pattern"] for p in procs])
        self.process_meta = [(p["groups"], p["id"], p["subject"], p["rank_kind"]) for p in procs]
        weak = g.get("weak_rank_markers", [])
        self.weak_markers = Patterns([p["pattern"] for p in weak])
        self.weak_groups = [p["groups"] for p in weak]

    def compiled(self) -> list[Any]:
        """Every compiled pattern (for tests: all of them are RE2 objects)."""
        out: list[Any] = [rx for rx, *_ in self.file_ranks]
        for group in (self.prefixes, self.markers, self.timestamps, self.processes):
            out += group.rx
        return out + self.weak_markers.rx

    def strip(self, text: str) -> Attribution:
        data = text.encode("utf-8")
        rank: int | None = None
        kind: str | None = None
        host: str | None = None
        pos = 0
        level = -1
        for _ in range(self.max_prefixes):
            rest = data[pos:]
            found = None
            for i in self.prefixes.found(rest):
                m = self.prefixes.rx[i].match(rest)
                if m is not None and m.end() > 0:
                    found = (m, *self.prefix_meta[i])
                    break
            if found is None:
                break
            m, groups, rk, lv = found
            if lv < level:
                break  # a node-level prefix inside a process-level one is the line's own text
            level = lv
            if "rank" in groups and (rank is None or self.innermost):
                rank, kind = int(m.group(groups["rank"])), rk
            if "host" in groups and host is None:
                host = _str(m, groups["host"])
            pos += m.end()
        content_b = data[pos:]
        content = content_b.decode("utf-8", "replace") if pos else text
        via = "prefix" if rank is not None else None
        if rank is None:
            hit = self.markers.first(content_b)
            if hit is not None:
                i, m = hit
                rank, kind, via = int(m.group(self.marker_groups[i]["rank"])), "global", "marker"
        return Attribution(content, text[: len(text) - len(content)], rank, kind, host, via)

    def file_rank(self, name: str) -> tuple[int | None, str | None]:
        # A file name need not be UTF-8 (os.fsdecode leaves surrogates, which RE2 refuses).
        norm = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        norm = norm.replace("\\", "/")
        base = norm.rsplit("/", 1)[-1]
        for rx, groups, rk, whole in self.file_ranks:
            m = rx.search(norm if whole else base)
            if m:
                return int(m.group(groups["rank"])), rk
        return None, None

    def process(self, content: str) -> Process | None:
        """The first `process_lines` pattern that matches the content, if any."""
        hit = self.processes.first(content.encode("utf-8")) if self.processes.rx else None
        if hit is None:
            return None
        i, m = hit
        groups, pid, subject, rk = self.process_meta[i]

        def get(name: str) -> str | None:
            return _str(m, groups[name]) if name in groups else None

        dev, rank = get("device"), get("rank")
        return Process(
            pid,
            subject,
            int(get("pid") or 0),
            get("host"),
            int(dev) if dev is not None else None,
            int(rank) if rank is not None else None,
            rk if rank is not None else None,
        )

    def weak_rank(self, content: str) -> int | None:
        hit = self.weak_markers.first(content.encode("utf-8")) if self.weak_markers.rx else None
        if hit is None:
            return None
        i, m = hit
        return int(m.group(self.weak_groups[i]["rank"]))

    def timestamp(self, text: str, default_year: int | None) -> tuple[float | None, int | None]:
        """(sortable seconds, year seen) of the first timestamp in `text`, else (None, None)."""
        hit = self.timestamps.first(text.encode("utf-8"))
        if hit is None:
            return None, None
        i, m = hit
        groups = self.timestamp_groups[i]

        def num(name: str) -> int:
            if name not in groups:
                return 0
            v = m.group(groups[name])
            return int(v) if v else 0

        year = num("year") if "year" in groups else None
        y = year if year is not None else (default_year or 2000)
        frac_b = m.group(groups["fraction"]) if "fraction" in groups else None
        frac = float("0." + frac_b.decode()) if frac_b else 0.0
        month = 0
        if "month_name" in groups:
            month = MONTHS.get(_str(m, groups["month_name"]) or "", 1)
        days = _days(y, month or num("month"), num("day"))
        secs = days * 86400 + num("hour") * 3600 + num("minute") * 60 + num("second") + frac
        return secs, year


class LookBack:
    """The time of a line that has none of its own: the last timestamp on the complete lines
    that begin in the LOOKBACK_BYTES before it, in the same source.

    Remembers the last timestamp found and how far the source has been examined, so that no
    byte is examined twice: the total work is linear in the size of the source, however many
    lines need a time."""

    def __init__(self, attr: Attributor, normalise: Callable[[bytes], str]) -> None:
        self.attr = attr
        self.normalise = normalise
        self.year: int | None = None
        self.examined = 0  # absolute offset up to which lines have been examined
        self.last: float | None = None
        self.last_at = -1  # absolute offset of the line that printed `last`
        self.examined_bytes = 0  # for tests: total bytes examined

    def own(self, text: str, at: int, end: int) -> float | None:
        """The line's own timestamp (the line spans absolute offsets [at, end))."""
        ts, y = self.attr.timestamp(text, self.year)
        if ts is not None:
            if y is not None:
                self.year = y
            if at >= self.last_at:
                self.last, self.last_at = ts, at
            self.examined = max(self.examined, end)
        return ts

    def _examine(self, block: bytes, lo: int, base: int, upto: int) -> None:
        """Examine the complete lines that begin in [max(examined, upto - LOOKBACK), upto),
        latest first, stopping at the first with a timestamp; `base` is block[lo]'s offset."""
        start_abs = max(self.examined, upto - LOOKBACK_BYTES, base)
        self.examined = max(self.examined, upto)
        start = lo + (start_abs - base)
        end = lo + (upto - base)
        if start > lo and block[start - 1 : start] != b"\n":
            nl = block.find(b"\n", start, end)
            if nl == -1:
                return
            start = nl + 1
        self.examined_bytes += end - start
        while end > start:
            ls = block.rfind(b"\n", start, end - 1) + 1
            if ls == 0:
                ls = start
            ts, y = self.attr.timestamp(self.normalise(block[ls:end]), self.year)
            if ts is not None:
                if y is not None:
                    self.year = y
                at = base + (ls - lo)
                if at >= self.last_at:
                    self.last, self.last_at = ts, at
                return
            end = ls

    def before(self, block: bytes, lo: int, base: int, st: int, end: int) -> float | None:
        """The time of the line at block[st] (absolute offsets [base + st - lo, end)), which
        has no timestamp of its own, from the lines before it."""
        at = base + (st - lo)
        if at > self.examined:
            self._examine(block, lo, base, at)
        self.examined = max(self.examined, end)  # this line has none: never examine it again
        if self.last is not None and 0 <= at - self.last_at <= LOOKBACK_BYTES:
            return self.last
        return None

    def end_block(self, block: bytes, lo: int, hi: int, base: int) -> None:
        """Examine the end of a block (at most LOOKBACK_BYTES) before its bytes are gone."""
        upto = base + (hi - lo)
        if upto > self.examined:
            self._examine(block, lo, base, upto)


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
    pid: int | None = None


@dataclass
class ElasticSummary:
    """torchelastic's ChildFailedError block(s), parsed from the lines that the scan found."""

    items: list[ElasticItem] = field(default_factory=list)

    @property
    def root_causes(self) -> list[ElasticItem]:
        return [i for i in self.items if i.section == "root_cause"]


# The members of globals.elastic_summary.patterns that this engine reads: a later minor version
# of the format may add others (the compatibility policy), which it ignores.
SUMMARY_PATTERNS = (
    "failures_header",
    "field_error_file",
    "field_exitcode",
    "field_host",
    "field_rank",
    "field_time",
    "field_traceback",
    "item_start",
    "root_cause_header",
    "separator",
)


class ElasticParser:
    """Fed the hit lines of one source in order; the summary patterns are part of the scan."""

    def __init__(self, g: dict[str, Any], summary: ElasticSummary) -> None:
        p = g["elastic_summary"]["patterns"]
        self.names = sorted(SUMMARY_PATTERNS)
        self.pats = Patterns([p[k] for k in self.names])
        self.rx = dict(zip(self.names, self.pats.rx, strict=True))
        self.summary = summary
        self.section: str | None = None
        self.current: ElasticItem | None = None

    def feed(self, content: str, line: int) -> ElasticItem | None:
        """Update the state with one line; return the item this line belongs to, if any."""
        data = content.encode("utf-8")
        found = {self.names[i] for i in self.pats.found(data)}
        if not found and self.current is None:
            return None

        def match(name: str) -> Any:
            return self.rx[name].match(data) if name in found else None

        if match("root_cause_header"):
            self.section, self.current = "root_cause", None
            return None
        if match("failures_header"):
            self.section, self.current = "failures", None
            return None
        if self.section is None:
            return None
        m = match("item_start")
        if m:
            self.current = ElasticItem(self.section, int(m.group(1)), line)
            self.summary.items.append(self.current)
            return self.current
        if match("separator"):
            self.section = self.current = None if content.startswith("=") else self.section
            self.current = None
            return None
        cur = self.current
        if cur is None:
            return None
        if m := match("field_rank"):
            cur.rank, cur.local_rank = int(m.group(1)), int(m.group(2))
        elif m := match("field_host"):
            cur.host = _str(m, 1)
        elif m := match("field_exitcode"):
            cur.exitcode, cur.signal, cur.pid = int(m.group(1)), _str(m, 3), int(m.group(2))
        elif m := match("field_time"):
            cur.time = (_str(m, 1) or "").strip()
        elif m := match("field_error_file"):
            cur.error_file = (_str(m, 1) or "").strip()
        elif m := match("field_traceback"):
            cur.traceback = (_str(m, 1) or "").strip()
        return cur


class ProcessMap:
    """pid -> rank (and NCCL's (host, cudaDev) -> rank) learnt from the lines of one log, to give
    a rank to process lines that carry none. Lines are resolved after the scan (a stream cannot
    be read twice); a pid or device that maps to more than one rank resolves nothing."""

    def __init__(self) -> None:
        self.pids: dict[int, set[tuple[int, str | None, str | None]]] = {}
        self.devices: dict[tuple[str, int], set[tuple[int, str | None, str | None]]] = {}

    def learn(self, proc: Process, rank: int | None, kind: str | None, host: str | None) -> None:
        """A process line; `rank`, `kind`, `host` are what the line itself says (prefix, marker,
        file name, torchelastic item)."""
        if proc.rank is not None:
            self.pids.setdefault(proc.pid, set()).add((proc.rank, proc.rank_kind, short_host(host)))
        elif proc.subject == "self" and rank is not None:
            h = short_host(proc.host or host)
            self.pids.setdefault(proc.pid, set()).add((rank, kind, h))
            if proc.device is not None and h:
                self.devices.setdefault((h, proc.device), set()).add((rank, kind, h))

    def learn_elastic(self, summary: ElasticSummary) -> None:
        for i in summary.items:
            if i.pid is not None and i.rank is not None:
                self.pids.setdefault(i.pid, set()).add((i.rank, "global", short_host(i.host)))

    def resolve(
        self, proc: Process, host: str | None
    ) -> tuple[int, str | None, str | None, str] | None:
        """(rank, rank kind, host, "pid" or "device") for a line printed by the process it
        names (subject "self"), or None. A launcher's line about a worker is never given the
        worker's rank: the worker did not print it."""
        if proc.subject != "self":
            return None
        h = short_host(proc.host or host)
        cands = self.pids.get(proc.pid, set())
        if h:
            cands = {c for c in cands if c[2] is None or c[2] == h}
        one = _one(cands)
        if one is not None:
            rank, kind, ch = one
            return rank, kind, host or proc.host or ch, "pid"
        if proc.device is not None and h:
            one = _one(self.devices.get((h, proc.device), set()))
            if one is not None:
                return one[0], one[1], host or proc.host, "device"
        return None


def _one(
    cands: set[tuple[int, str | None, str | None]],
) -> tuple[int, str | None, str | None] | None:
    """The one rank the candidates agree on: a single global rank, else (no global rank known)
    a single local rank; None when they disagree or there are none."""
    for kind in ("global", "local"):
        of_kind = sorted((c for c in cands if c[1] == kind), key=lambda c: (c[0], c[2] or ""))
        if len({c[0] if kind == "global" else (c[0], c[2]) for c in of_kind}) == 1:
            return of_kind[0]
        if of_kind:
            return None
    return None


def attribute_all(
    g: dict[str, Any], sources: list[tuple[str | None, bytes]]
) -> list[list[dict[str, Any]]]:
    """Rank, host and time of every line of every source, per the pack's rules (the reference
    for the attribution conformance vectors; the engine applies the same steps to the lines its
    scan keeps). `sources` are (file name or None for a stream, content)."""
    from .normalise import Normaliser

    attr = Attributor(g)
    normalise = Normaliser(g["ansi_escape"])
    pmap = ProcessMap()
    summary = ElasticSummary()
    out: list[list[dict[str, Any]]] = []
    pending: list[tuple[dict[str, Any], Process | None, int | None]] = []
    for name, data in sources:
        file_rank, file_kind = attr.file_rank(name) if name is not None else (None, None)
        parser = ElasticParser(g, summary)
        lookback = LookBack(attr, normalise)
        lines: list[dict[str, Any]] = []
        pos = 0
        # Lines end at \n only (step 1): bytes.splitlines would also split at a lone \r, the
        # carriage-return progress bar that step 2 reduces to its last segment.
        parts = data.split(b"\n")
        raws = [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
        for n, raw in enumerate(raws, 1):
            text = normalise(raw)
            a = attr.strip(text)
            item = parser.feed(a.content, n)
            rank, kind, host, via = a.rank, a.rank_kind, a.host, a.rank_via
            if rank is None and file_rank is not None:
                rank, kind, via = file_rank, file_kind, "file-name"
            if rank is None and item is not None and item.rank is not None:
                rank, kind, host, via = item.rank, "global", host or item.host, "elastic-summary"
            proc = attr.process(a.content) if a.content else None
            if proc is not None:
                pmap.learn(proc, rank, kind, host)
            ts = lookback.own(text, pos, pos + len(raw))
            if ts is None:
                ts = lookback.before(data, 0, 0, pos, pos + len(raw))
            rec = {"line": n, "rank": rank, "rank_kind": kind, "host": host, "rank_via": via}
            rec["time"] = ts
            lines.append(rec)
            if rank is None:
                pending.append((rec, proc, attr.weak_rank(a.content)))
            pos += len(raw)
        out.append(lines)
    pmap.learn_elastic(summary)
    for rec, proc, weak in pending:
        got = pmap.resolve(proc, rec["host"]) if proc is not None else None
        if got is not None:
            rec["rank"], rec["rank_kind"], rec["host"], rec["rank_via"] = got
        elif weak is not None:
            rec["rank"], rec["rank_kind"], rec["rank_via"] = weak, "global", "shard"
    return out


def format_time(ts: float | None) -> str | None:
    """A sortable time (seconds since 0000-03-01, as `Attributor.timestamp` gives) as ISO 8601
    `YYYY-MM-DDTHH:MM:SS.mmm`, milliseconds rounded (for the conformance vectors)."""
    if ts is None:
        return None
    import datetime

    millis = round(ts * 1000)
    days, rem = divmod(millis, 86_400_000)
    # _days(2000, 1, 1) is the day number of 2000-01-01
    date = datetime.date(2000, 1, 1) + datetime.timedelta(days=days - _days(2000, 1, 1))
    t = datetime.datetime.combine(date, datetime.time()) + datetime.timedelta(milliseconds=rem)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{rem % 1000:03d}"
