"""The matching engine: raw (multi-rank) logs in, a report out.

Steps, one module each: read -> normalise -> attribute -> scan -> evaluate -> explain. The engine
runs only on an exported rule pack (`rules.load_rulepack`), the same file other tools get.

    from denpex_kb.engine import Engine, load_rulepack
    report = Engine(load_rulepack()).analyse_paths(["logs/"])
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, BinaryIO

from .attribute import Attributor, ElasticParser, ElasticSummary
from .evaluate import Hit, evaluate
from .explain import build_candidates, explain, render_markdown, render_text
from .normalise import Normaliser
from .read import InputError, Source, collect_sources, iter_blocks, open_source
from .rules import RulesError, load_rulepack
from .scan import make_prefilter

__all__ = [
    "Engine",
    "collect_sources",
    "InputError",
    "RulesError",
    "load_rulepack",
    "render_markdown",
    "render_text",
]

LOOKBACK_BYTES = 8192
MAX_ACTIVE_RANK_PREFIXES = 64
WORLD_SIZE = re.compile(r"dist_world_size=([0-9]+)")
MAX_UNEXPLAINED = 256


class _RankLines:
    """Counts, per launcher prefix seen on a hit line, the lines carrying that prefix, so that
    window_lines is measured in the lines of one rank (cheap: bytes.count per active prefix)."""

    def __init__(self) -> None:
        self.base: dict[bytes, int] = {}

    def index(self, lit: bytes, block: bytes, lo: int, start: int) -> int | None:
        at_lo = 1 if start > lo and block.startswith(lit, lo) else 0
        within = block.count(b"\n" + lit, lo, start) + at_lo
        if lit not in self.base:
            if len(self.base) >= MAX_ACTIVE_RANK_PREFIXES:
                return None
            self.base[lit] = -within
        return self.base[lit] + within

    def end_block(self, block: bytes, lo: int, hi: int) -> None:
        for lit in self.base:
            at_lo = 1 if block.startswith(lit, lo) else 0
            self.base[lit] += block.count(b"\n" + lit, lo, hi) + at_lo


class Engine:
    def __init__(self, pack: dict[str, Any], scanner: str | None = None) -> None:
        import re2

        self.pack = pack
        g = pack["globals"]
        self.entries: list[dict[str, Any]] = pack["entries"]
        self.scoring = g["scoring"]
        self.sig_index: dict[tuple[int, str], int] = {}
        self.sig_entry: dict[int, set[str]] = defaultdict(set)
        # Signals of rules with a per-rank window: only their hit lines need the rank's own line
        # count, which costs a bytes.count per tracked prefix per block, so track no more.
        self.window_signals: set[int] = set()
        sig_patterns: list[tuple[str, bool]] = []
        for ei, e in enumerate(self.entries):
            for s in e["signals"]:
                gi = len(sig_patterns)
                self.sig_index[(ei, s["id"])] = gi
                sig_patterns.append((s["pattern"], s["ignore_case"]))
                rule = e["match"]
                if s["id"] in rule["all"] or s["id"] in rule["any"]:
                    self.sig_entry[gi].add(e["id"])
                if rule["window_lines"] and rule["scope"] == "rank":
                    self.window_signals.add(gi)
        self.sigset = None
        if sig_patterns:
            opts = re2.Options()
            opts.max_mem = 64 << 20
            opts.log_errors = False
            self.sigset = re2.Set.SearchSet(opts)
            for p, ic in sig_patterns:
                self.sigset.Add(("(?i)" if ic else "") + p)
            self.sigset.Compile()
        self.banners = [
            (re.compile(b["pattern"], re.ASCII), b["package"], b["groups"]["version"])
            for b in g["version_banners"]
        ]
        self.boilerplate = [re.compile(b["pattern"], re.ASCII) for b in g["boilerplate"]]
        extra = [(b["pattern"], False) for b in g["version_banners"]]
        extra += [(p, False) for p in g["elastic_summary"]["patterns"].values()]
        extra.append((WORLD_SIZE.pattern, False))
        self.exception_rx = re.compile(g["exception_line"])
        extra.append((g["exception_line"], False))
        self.prefilter = make_prefilter(sig_patterns + extra, scanner)
        self.normalise = Normaliser(g["ansi_escape"])
        self.ansi_bytes = re.compile(g["ansi_escape"].encode())
        self.attr = Attributor(g)
        self.globals = g

    # ------------------------------------------------------------------------------------
    def analyse_paths(self, paths: list[str]) -> dict[str, Any]:
        return self.analyse(collect_sources(paths))

    def analyse_bytes(self, data: bytes, name: str = "<text>") -> dict[str, Any]:
        import io

        return self.analyse([Source(name, None)], streams=[io.BytesIO(data)])

    def analyse(
        self, sources: list[Source], streams: list[BinaryIO] | None = None
    ) -> dict[str, Any]:
        hits: list[Hit] = []
        printed: dict[str, set[str]] = defaultdict(set)
        summary = ElasticSummary()
        inputs = []
        seen_ranks: set[int] = set()
        world: list[int] = []
        unexplained: list[Hit] = []
        # A file in a folder that cannot be read (or a truncated archive) is a warning; the
        # rest of the input is still diagnosed. A file named on the command line is an error.
        warnings: list[str] = []
        for si, src in enumerate(sources):
            try:
                stream = streams[si] if streams is not None else open_source(src)
            except InputError as exc:
                if not src.in_folder:
                    raise
                warnings.append(str(exc))
                continue
            try:
                n_lines, n_bytes = self._scan_source(
                    si, src, stream, hits, printed, summary, seen_ranks, world, unexplained
                )
            except InputError as exc:
                if not src.in_folder:
                    raise
                warnings.append(f"{exc}; diagnosed what was read before")
                continue
            finally:
                warnings.extend(getattr(stream, "warnings", ()))
                if streams is None and src.path is not None:
                    stream.close()
            inputs.append({"file": src.name, "lines": n_lines, "bytes": n_bytes})
        if not inputs and warnings:
            raise InputError(warnings[0])
        firings = evaluate(self.entries, self.sig_index, hits, printed)
        cands = build_candidates(firings, hits, self.sig_entry, self.scoring)
        names = [s.name for s in sources]
        report = explain(
            cands,
            summary,
            names,
            self.scoring,
            max(world) if world else None,
            seen_ranks,
            unexplained,
        )
        report["versions"] = {k: sorted(v) for k, v in sorted(printed.items())}
        report["inputs"] = inputs
        report["warnings"] = warnings
        report["rulepack"] = {
            "content_hash": self.pack["content_hash"],
            "kb_version": self.pack["kb_version"],
            "format_version": self.pack["format_version"],
        }
        report["scanner"] = self.prefilter.name
        report["format"] = "denpex-report"
        report["format_version"] = "1.0"
        return report

    def _time_of(
        self, text: str, year: int | None, block: bytes, lo: int, st: int
    ) -> tuple[float | None, int | None]:
        """The line's own timestamp, else the last one printed shortly before it."""
        ts, y = self.attr.timestamp(text, year)
        if y is not None:
            year = y
        if ts is None:
            back = block[max(lo, st - LOOKBACK_BYTES) : st].decode("utf-8", "replace")
            for line in reversed(back.splitlines()):
                ts, _ = self.attr.timestamp(line, year)
                if ts is not None:
                    break
        return ts, year

    # ------------------------------------------------------------------------------------
    def _scan_source(
        self,
        si: int,
        src: Source,
        stream: BinaryIO,
        hits: list[Hit],
        printed: dict[str, set[str]],
        summary: ElasticSummary,
        seen_ranks: set[int],
        world: list[int],
        unexplained: list[Hit],
    ) -> tuple[int, int]:
        attr = self.attr
        normalise = self.normalise
        sigset = self.sigset
        file_rank, file_kind = attr.file_rank(src.name) if src.path is not None else (None, None)
        parser = ElasticParser(self.globals, summary)
        rank_lines = _RankLines()
        unexplained_seen: set[tuple] = set()
        lines_before = 0
        offset = 0
        year: int | None = None
        for block, lo, hi in iter_blocks(stream, src.name):
            if block.find(b"\x1b", lo, hi) != -1:
                block = self.ansi_bytes.sub(b"", block[lo:hi])
                lo, hi = 0, len(block)
            if block.find(b"\x00", lo, hi) != -1:
                block = block[lo:hi].replace(b"\x00", b"")
                lo, hi = 0, len(block)
            starts = self.prefilter.line_starts(block, lo, hi)
            cnt, cnt_pos = lines_before, lo
            for st in starts:
                cnt += block.count(b"\n", cnt_pos, st)
                cnt_pos = st
                end = block.find(b"\n", st, hi)
                raw = block[st : end if end != -1 else hi]
                text = normalise(raw)
                a = attr.strip(text)
                content = a.content
                item = parser.feed(content, cnt + 1)
                rank, kind, host = a.rank, a.rank_kind, a.host
                if rank is None and file_rank is not None:
                    rank, kind = file_rank, file_kind
                if rank is None and item is not None and item.rank is not None:
                    rank, kind, host = item.rank, "global", host or item.host
                for rx, pkg, gi in self.banners:
                    m = rx.search(content)
                    if m:
                        printed[pkg].add(m.group(gi))
                m = WORLD_SIZE.search(content)
                if m:
                    world.append(int(m.group(1)))
                if rank is not None:
                    seen_ranks.add(rank)
                sigs = sigset.Match(content) if sigset is not None and content else None
                if not sigs and content and self.exception_rx.search(content):
                    # An exception no signal explains: an error the knowledge base does not
                    # know. Keep the first per rank (bounded) for the report.
                    ukey = (si, rank, host)
                    if ukey not in unexplained_seen and len(unexplained) < MAX_UNEXPLAINED:
                        unexplained_seen.add(ukey)
                        ts, year = self._time_of(text, year, block, lo, st)
                        scope_key: tuple = (
                            ("rank", rank, host) if rank is not None else ("stream", si)
                        )
                        unexplained.append(
                            Hit(si, offset + st - lo, cnt + 1, cnt, scope_key, rank, host, ts, text)
                        )
                    continue
                if not sigs or any(b.search(content) for b in self.boilerplate):
                    continue
                ts, year = self._time_of(text, year, block, lo, st)
                rank_line: int | None = cnt
                if a.prefix and rank is not None and not self.window_signals.isdisjoint(sigs):
                    lit = a.prefix.rstrip().encode("utf-8", "replace")
                    if raw.startswith(lit):
                        rank_line = rank_lines.index(lit, block, lo, st)
                if rank_line is None:
                    rank_line = cnt
                if rank is not None:
                    key: tuple = ("rank", rank, host if kind == "local" else None)
                else:
                    key = ("stream", si)
                hits.append(
                    Hit(
                        source=si,
                        offset=offset + st - lo,
                        line=cnt + 1,
                        rank_line=rank_line,
                        key=key,
                        rank=rank,
                        host=host,
                        time=ts,
                        text=text,
                        signals=frozenset(sigs),
                    )
                )
            lines_before = cnt + block.count(b"\n", cnt_pos, hi)
            rank_lines.end_block(block, lo, hi)
            offset += hi - lo
        if offset and not lines_before:
            lines_before = 1
        elif offset:
            # a last line without a newline still counts
            pass
        return lines_before, offset


def suggest_related(report: dict[str, Any], kb_dir: str | None = None, limit: int = 3) -> None:
    """When no rule fired but the log holds errors no entry recognises, add `related`: the
    entries closest to those errors in the full-text index, with a low confidence (a hint for
    the reader, never a diagnosis). Builds the per-user index on first use."""
    errors = report.get("unrecognised_errors") or []
    if report["verdict"] != "no-match" or not errors:
        report["related"] = []
        return
    from ..index import related_entries
    from ..kb import KBError

    query = "\n".join(e["text"] for e in errors[:10])
    try:
        report["related"] = related_entries(query, kb_dir=kb_dir, limit=limit)
    except KBError:
        report["related"] = []  # a broken knowledge base only costs the suggestions
