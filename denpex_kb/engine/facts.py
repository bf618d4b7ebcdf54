"""Step 4, facts: typed environment evidence from the log (df tables, lsof, config prints,
CUDA-OOM numbers, paths named by failing calls), and the entries' conditions over it.

Extractors come from the pack (`globals.facts`); conditions from each entry's `match.facts`.
The semantics are in docs/rule-pack-format.md ("Facts" and "Fact conditions").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import re2

MAX_RECORDS_PER_FACT = 64
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
_SIZE = re2.compile(r"^([0-9][0-9.,]*) ?(?:([KMGTPE])i?B?|B|bytes)?$")


def _opts() -> Any:
    o = re2.Options()
    o.log_errors = False
    return o


def parse_size(text: str) -> int | None:
    """Bytes of '35G', '1.5T', '20.00 MiB', '512 bytes', '4096' (a bare number as printed)."""
    m = _SIZE.search(text.strip())
    if m is None:
        return None
    try:
        value = float(m.group(1).replace(",", ""))
    except ValueError:
        return None
    return int(value * _UNITS[m.group(2) or ""])


def _convert(value: str, kind: str) -> int | str | None:
    if kind == "int":
        return int(value) if value.isdigit() else None
    if kind == "size":
        return parse_size(value)
    return value


@dataclass(frozen=True)
class Fact:
    name: str
    fields: dict[str, int | str]
    source: int
    line: int
    rank: int | None
    text: str


class _Extractor:
    def __init__(self, spec: dict[str, Any], pattern: str) -> None:
        self.fact = spec["fact"]
        self.types: dict[str, str] = spec.get("types", {})
        self.groups: dict[str, int] = spec.get("groups", {})
        self.rx = re2.compile(pattern, _opts())

    def extract(self, content: str) -> dict[str, int | str] | None:
        m = self.rx.search(content)
        if m is None:
            return None
        fields: dict[str, int | str] = {}
        for name, gi in self.groups.items():
            value = m.group(gi)
            if value is None:
                continue
            conv = _convert(value, self.types.get(name, "str"))
            if conv is not None:
                fields[name] = conv
        return fields


class FactCollector:
    """Feeds lines to the pack's extractors; keeps a bounded number of records per fact."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.tables = [
            (_Extractor(t, t["header"]), _Extractor(t, t["row"]), t["max_rows"])
            for t in spec["tables"]
        ]
        self.lines = [_Extractor(s, s["pattern"]) for s in spec["lines"]]
        self.records: dict[str, list[Fact]] = defaultdict(list)
        self.counts: dict[str, int] = defaultdict(int)
        self._header: dict[int, tuple[int, int]] = {}  # source -> (table index, header line)
        self._gate = None
        if self.patterns():
            self._gate = re2.Set.SearchSet(_opts())
            for p in self.patterns():
                self._gate.Add(p)
            self._gate.Compile()

    def wants(self, content: str) -> bool:
        """Whether any extractor can match the line (one RE2 set pass, cheap)."""
        return self._gate is not None and bool(self._gate.Match(content))

    def patterns(self) -> list[str]:
        """What the whole-file scan must find: table headers and single-line facts. Table rows
        are read only in the bounded window after their header (`rows_after`)."""
        return [h.rx.pattern for h, _, _ in self.tables] + [x.rx.pattern for x in self.lines]

    def max_rows(self, si: int) -> int:
        current = self._header.get(si)
        return self.tables[current[0]][2] if current is not None else 0

    def _add(self, name: str, fields: dict[str, int | str], si: int, line: int, rank, text) -> None:  # noqa: ANN001
        self.counts[name] += 1
        if len(self.records[name]) < MAX_RECORDS_PER_FACT:
            self.records[name].append(Fact(name, fields, si, line, rank, text[:500]))

    def observe(self, si: int, content: str, line: int, rank: int | None, text: str) -> str | None:
        """Feed one line; returns "header", "row", "line" (what it was) or None."""
        for ti, (header, _row, _n) in enumerate(self.tables):
            if header.rx.search(content):
                self._header[si] = (ti, line)
                return "header"
        current = self._header.get(si)
        if current is not None:
            ti, at = current
            header, row, max_rows = self.tables[ti]
            if line - at <= max_rows:
                fields = row.extract(content)
                if fields is not None:
                    self._add(row.fact, fields, si, line, rank, text)
                    return "row"
        found = None
        for ex in self.lines:
            fields = ex.extract(content)
            if fields is not None:
                self._add(ex.fact, fields, si, line, rank, text)
                found = "line"
        return found

    def as_json(self) -> dict[str, Any]:
        return {
            name: {
                "count": self.counts[name],
                "records": [
                    {"fields": f.fields, "source": f.source, "line": f.line, "rank": f.rank}
                    for f in recs
                ],
            }
            for name, recs in sorted(self.records.items())
        }


# ---------------------------------------------------------------------------------------------
# Conditions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    condition: dict[str, Any]
    state: str  # "holds", "fails", "unknown"
    records: tuple[Fact, ...] = ()

    @property
    def effect(self) -> str:
        return self.condition["effect"]


_RX_CACHE: dict[str, Any] = {}


def _rx(pattern: str) -> Any:
    rx = _RX_CACHE.get(pattern)
    if rx is None:
        rx = _RX_CACHE[pattern] = re2.compile(pattern, _opts())
    return rx


def _operand(rec: Fact, v: Any) -> int | str | None:
    if isinstance(v, dict):  # {"sum": [field, ...]}
        parts = [rec.fields.get(f) for f in v["sum"]]
        if any(not isinstance(p, int) for p in parts):
            return None
        return sum(parts)  # type: ignore[arg-type]
    return v


def _test_one(rec: Fact, field: str, ops: dict[str, Any]) -> bool | None:
    """True/False, or None when the record lacks what the test needs."""
    value = rec.fields.get(field)
    if value is None:
        return None
    for op, raw in ops.items():
        if op in ("matches", "not_matches"):
            found = _rx(raw).search(str(value)) is not None
            ok = found if op == "matches" else not found
        else:
            other = _operand(rec, raw)
            if other is None:
                return None
            if op in ("eq", "ne"):
                ok = (value == other) == (op == "eq")
            elif not isinstance(value, int) or not isinstance(other, int):
                return None
            else:
                ok = {
                    "lt": value < other,
                    "le": value <= other,
                    "gt": value > other,
                    "ge": value >= other,
                }[op]
        if not ok:
            return False
    return True


def _passes(rec: Fact, tests: dict[str, dict[str, Any]]) -> bool | None:
    result: bool | None = True
    for field, ops in tests.items():
        r = _test_one(rec, field, ops)
        if r is None:
            return None
        result = result and r
    return result


def error_mount_records(records: list[Fact], error_paths: list[str]) -> list[Fact]:
    """The records of the mount holding a path a failing call named (longest mount prefix);
    all records when no named path lies under any listed mount."""
    best: list[Fact] = []
    best_len = -1
    for path in error_paths:
        for rec in records:
            mount = rec.fields.get("mount")
            if not isinstance(mount, str):
                continue
            under = path == mount or path.startswith(mount.rstrip("/") + "/")
            if under and len(mount) > best_len:
                best, best_len = [rec], len(mount)
            elif under and len(mount) == best_len:
                best.append(rec)
    return best or records


def check(cond: dict[str, Any], facts: dict[str, list[Fact]]) -> Outcome:
    records = list(facts.get(cond["fact"], ()))
    if cond.get("select") == "error-mount":
        paths = [
            p for f in facts.get("error_path", ()) if isinstance(p := f.fields.get("path"), str)
        ]
        records = error_mount_records(records, paths)
    where = cond.get("where") or {}
    selected = [r for r in records if _passes(r, where) is True]
    test = cond.get("test") or {}
    results = [(r, _passes(r, test)) for r in selected]
    results = [(r, ok) for r, ok in results if ok is not None]
    if not results:
        return Outcome(cond, "unknown")
    passing = tuple(r for r, ok in results if ok)
    if cond.get("quantifier", "any") == "all":
        state = "holds" if len(passing) == len(results) else "fails"
        return Outcome(cond, state, tuple(r for r, _ in results) if state == "holds" else ())
    return Outcome(cond, "holds" if passing else "fails", passing)


def check_all(conds: list[dict[str, Any]], facts: dict[str, list[Fact]]) -> list[Outcome]:
    return [check(c, facts) for c in conds]
