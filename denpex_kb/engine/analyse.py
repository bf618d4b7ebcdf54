"""The analysis run: every source read once, block by block; each line the scan finds is
normalised, attributed to a rank, host and time, checked for facts and signals; then the
entries are evaluated and the report is built (steps in their own modules, see __init__)."""

from __future__ import annotations

import io
import os
import stat
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from . import read, split
from .attribute import (
    SUMMARY_PATTERNS,
    Attributor,
    ElasticParser,
    ElasticSummary,
    LookBack,
    Patterns,
    ProcessMap,
    compile_rx,
)
from .cuttrace import TAIL_BYTES, cut_note, first_cut, tail_of
from .diagnose import build_candidates, diagnose
from .evaluate import Hit, evaluate
from .explain import explain
from .facts import FactCollector
from .normalise import Normaliser
from .read import Decompressed, InputError, Source, collect_sources, iter_blocks, open_source
from .scan import line_finder, make_prefilter
from .signals import SignalMatcher
from .split import Prescan, prepare
from .unfired import mark_declined, unfired_errors

MAX_ACTIVE_RANK_PREFIXES = 64
WORLD_SIZE = compile_rx(rb"dist_world_size=([0-9]+)")
MAX_UNEXPLAINED = 256
# Memory is bounded by design: per scope key (rank or stream) and signal, the first hits are kept
# as evidence and the rest only counted, so a log where every line is a hit costs no more memory
# than one with a few (the report cites at most a dozen lines an entry anyway).
MAX_HITS_PER_SIGNAL = 512


@dataclass
class _Run:
    """What one analysis gathers over all its sources, in input order (one per `analyse` call;
    mutable on purpose: the scan appends to it line by line)."""

    facts: FactCollector
    hits: list[Hit] = field(default_factory=list)
    printed: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    summary: ElasticSummary = field(default_factory=ElasticSummary)
    seen_ranks: set[int] = field(default_factory=set)
    world: list[int] = field(default_factory=list)
    unexplained: list[Hit] = field(default_factory=list)
    pmap: ProcessMap = field(default_factory=ProcessMap)
    # (source, last bytes, lines, longer than those bytes): for cut tracebacks
    tails: list[tuple[int, bytes, int, bool]] = field(default_factory=list)


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
                if s["id"] in rule["all"] or s["id"] in rule["any"] or s["id"] in rule["weak"]:
                    self.sig_entry[gi].add(e["id"])
                if rule["window_lines"] and rule["scope"] == "rank":
                    self.window_signals.add(gi)
        # Log-text patterns run on a line's UTF-8 bytes, with RE2 (a set call first).
        self.banners = Patterns([b["pattern"] for b in g["version_banners"]])
        self.banner_meta = [(b["package"], b["groups"]["version"]) for b in g["version_banners"]]
        self.boilerplate = Patterns([b["pattern"] for b in g["boilerplate"]])
        extra = [(b["pattern"], False) for b in g["version_banners"]]
        # The torchelastic summary's item-start line (`[0]:`) has no literal but `]:`, which is on
        # every rank-prefixed line: it is looked for only inside a summary section, after the
        # section's header (a literal the scan finds), see _scan_source. Every other summary line
        # is part of the whole-file scan.
        es = g["elastic_summary"]["patterns"]
        # The summary patterns this engine knows (a later minor version may add members).
        extra += [(es[k], False) for k in sorted(SUMMARY_PATTERNS) if k != "item_start"]
        self.item_start_rx = line_finder(es["item_start"])
        extra.append((WORLD_SIZE.pattern.decode(), False))
        self.fact_spec = g["facts"]
        extra += [(p, False) for p in FactCollector(self.fact_spec).patterns()]
        self.exception_rx = compile_rx(g["exception_line"].encode())
        extra.append((g["exception_line"], False))
        self.salient_rx = compile_rx(g["salient_line"].encode())
        extra.append((g["salient_line"], False))
        # process lines are prefiltered by their literals: every line they match contains one
        extra += [
            ("".join(c if c.isalnum() or c == " " else "\\" + c for c in lit), False)
            for p in g.get("process_lines", [])
            for lit in p.get("literals") or []
        ]
        self.prefilter_patterns = sig_patterns + extra
        self.prefilter = make_prefilter(self.prefilter_patterns, scanner)
        self.signals = SignalMatcher(sig_patterns, self.prefilter)
        self.normalise = Normaliser(g["ansi_escape"])
        self.ansi_bytes = compile_rx(g["ansi_escape"].encode())
        self.attr = Attributor(g)
        self.globals = g

    # ------------------------------------------------------------------------------------
    def analyse_paths(self, paths: list[str], jobs: int = 1) -> dict[str, Any]:
        return self.analyse(collect_sources(paths), jobs=jobs)

    def analyse_bytes(self, data: bytes, name: str = "<text>") -> dict[str, Any]:
        import io

        return self.analyse([Source(name, None)], streams=[io.BytesIO(data)])

    def analyse(
        self, sources: list[Source], streams: list[BinaryIO] | None = None, jobs: int = 1
    ) -> dict[str, Any]:
        """The report on these sources. With jobs > 1, a large regular file is scanned by that
        many worker processes (engine.split): the same report, sooner."""
        run = _Run(FactCollector(self.fact_spec))
        inputs = []
        self._hit_counts: dict[tuple, int] = defaultdict(int)
        self.hits_dropped = 0
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
                n_lines, n_bytes = self._scan_source(si, src, stream, run, jobs)
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
        self._resolve_ranks(run)
        firings = evaluate(self.entries, self.sig_index, run.hits, run.printed)
        cands = build_candidates(firings, run.hits, self.sig_entry)
        unfired = unfired_errors(
            run.hits,
            self.sig_entry,
            {c.id for c in cands},
            MAX_UNEXPLAINED - len(run.unexplained),
            lambda t: self.attr.strip(t).content,
            self.exception_rx,
            self.salient_rx,
        )
        run.unexplained.extend(unfired)
        diag = diagnose(cands, run.facts.records, self.scoring)
        names = [s.name for s in sources]
        report = explain(
            diag,
            run.summary,
            names,
            max(run.world) if run.world else None,
            run.seen_ranks,
            run.unexplained,
        )
        mark_declined(report, unfired, names, self.sig_entry)
        report["cut_traceback"] = None
        if diag.root is None:
            report["cut_traceback"] = first_cut(run.tails, self._content, self._is_error, names)
            if report["cut_traceback"] is not None:
                report["notes"].append(cut_note(report["cut_traceback"]))
        report["versions"] = {k: sorted(v) for k, v in sorted(run.printed.items())}
        report["facts"] = run.facts.as_json()
        report["hits_beyond_cap"] = self.hits_dropped
        report["inputs"] = inputs
        report["warnings"] = warnings
        report["rulepack"] = {
            "content_hash": self.pack["content_hash"],
            "kb_version": self.pack["kb_version"],
            "format_version": self.pack["format_version"],
        }
        report["scanner"] = self.prefilter.name
        report["format"] = "denpex-report"
        report["format_version"] = "1.3"
        return report

    def _content(self, raw: bytes) -> str:
        return self.attr.strip(self.normalise(raw)).content

    def _is_error(self, content: bytes) -> bool:
        return bool(self.exception_rx.search(content) or self.salient_rx.search(content))

    @staticmethod
    def _resolve_ranks(run: _Run) -> None:
        """Lines without a rank: through the log's pid (or NCCL device) map, else a shard name."""
        run.pmap.learn_elastic(run.summary)
        for h in run.hits + run.unexplained:
            if h.rank is not None:
                continue
            got = run.pmap.resolve(h.process, h.host) if h.process is not None else None
            if got is not None:
                rank, kind, h.host, h.rank_via = got
            elif h.weak_rank is not None:
                rank, kind, h.rank_via = h.weak_rank, "global", "shard"
            else:
                continue
            h.rank = rank
            h.key = ("rank", rank, h.host if kind == "local" else None)
            run.seen_ranks.add(rank)

    @staticmethod
    def _time_of(
        lookback: LookBack, text: str, block: bytes, lo: int, st: int, at: int, end: int, hi: int
    ) -> float | None:
        """The line's own timestamp, else the last one printed shortly before it (each byte of
        the source is examined at most once for this, however many lines need a time)."""
        line_end = at + ((end + 1) if end != -1 else hi) - st
        ts = lookback.own(text, at, line_end)
        return ts if ts is not None else lookback.before(block, lo, at - (st - lo), st, line_end)

    def _table_rows(
        self,
        si: int,
        block: bytes,
        end: int,
        hi: int,
        header_line: int,
        rank: int | None,
        facts: FactCollector,
    ) -> None:
        """The rows under a table header (df -h, df -i): read directly in a bounded window after
        it, up to the first line that is not a row (a table is contiguous), so the whole-file
        scan never has to look for the rows' generic shape."""
        pos, line = end + 1, header_line
        for _ in range(facts.max_rows(si)):
            if end == -1 or pos >= hi:
                return
            nl = block.find(b"\n", pos, hi)
            raw = block[pos : nl if nl != -1 else hi]
            line += 1
            text = self.normalise(raw)
            a = self.attr.strip(text)
            if (
                facts.observe(si, a.content, line, a.rank if a.rank is not None else rank, text)
                != "row"
            ):
                return
            if nl == -1:
                return
            pos = nl + 1

    def _keep_hit(self, key: tuple, sigs: Any) -> bool:
        """Count the hit; keep it unless every signal it matched already has its quota here."""
        counts = self._hit_counts
        keep = False
        for sg in sigs:
            counts[(key, sg)] += 1
            if counts[(key, sg)] <= MAX_HITS_PER_SIGNAL:
                keep = True
        if not keep:
            self.hits_dropped += 1
        return keep

    # ------------------------------------------------------------------------------------
    def _scan_source(
        self, si: int, src: Source, stream: BinaryIO, run: _Run, jobs: int = 1
    ) -> tuple[int, int]:
        pre = self._prescan(src, stream, jobs)
        try:
            return self._scan_blocks(si, src, stream, run, pre)
        finally:
            if pre is not None:
                pre.close()

    def _prescan(self, src: Source, stream: BinaryIO, jobs: int) -> Prescan | None:
        """Worker processes for a large regular file (not a pipe, not compressed), read from its
        start (a progress wrapper around the file is looked through: it only counts)."""
        if jobs <= 1 or src.path is None:
            return None
        inner = stream
        if not isinstance(inner, io.BufferedReader | Decompressed):
            inner = getattr(inner, "inner", inner)
        if not isinstance(inner, io.BufferedReader):
            return None
        try:
            st = os.fstat(inner.fileno())
            if inner.tell() != 0:
                return None
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size < split.SPLIT_MIN_BYTES:
            return None
        return Prescan(
            str(src.path),
            st.st_size,
            jobs,
            self.prefilter_patterns,
            self.prefilter.name,
            self.globals["ansi_escape"],
        )

    def _scan_blocks(
        self, si: int, src: Source, stream: BinaryIO, run: _Run, pre: Prescan | None
    ) -> tuple[int, int]:
        # Locals: the loop below runs once per candidate line.
        hits, printed, world, seen_ranks = run.hits, run.printed, run.world, run.seen_ranks
        unexplained, facts, pmap = run.unexplained, run.facts, run.pmap
        attr = self.attr
        normalise = self.normalise
        signals = self.signals.match
        file_rank, file_kind = attr.file_rank(src.name) if src.path is not None else (None, None)
        parser = ElasticParser(self.globals, run.summary)
        item_start_rx = self.item_start_rx
        rank_lines = _RankLines()
        unexplained_seen: set[tuple] = set()
        lines_before = 0
        offset = 0
        lookback = LookBack(attr, normalise)
        raw_off = 0
        tail = b""
        for block, lo, hi in iter_blocks(stream, src.name, read.BLOCK_SIZE):
            rec = pre.get(raw_off, hi - lo) if pre is not None else None
            raw_off += hi - lo
            tail = tail_of(block, lo, hi, tail)
            if rec is None or rec[5]:
                block, lo, hi = prepare(block, lo, hi, self.ansi_bytes)
            counts = None
            if rec is not None:
                starts, counts, total = rec[2], rec[3], rec[4]
            else:
                starts = self.prefilter.line_starts(block, lo, hi)
            cnt, cnt_pos = lines_before, lo
            i_st, n_st = 0, len(starts)
            pos = lo  # the lines before pos have been handled (or were not hits)
            while True:
                # The next line to handle: the next hit of the scan, or, while a torchelastic
                # summary section is open, an item-start line before it (searched only there).
                nxt = starts[i_st] if i_st < n_st else hi
                st = -1
                if parser.section is not None and pos < nxt:
                    m = item_start_rx.search(block, pos, nxt)
                    if m is not None:
                        st = block.rfind(b"\n", pos, m.start()) + 1 or pos
                if st < 0:
                    if i_st >= n_st:
                        break
                    st = nxt
                    i_st += 1
                    if counts is not None:  # the workers counted
                        cnt, cnt_pos = lines_before + counts[i_st - 1], st
                if cnt_pos != st:
                    cnt += block.count(b"\n", cnt_pos, st)
                    cnt_pos = st
                end = block.find(b"\n", st, hi)
                pos = end + 1 if end != -1 else hi
                raw = block[st : end if end != -1 else hi]
                text = normalise(raw)
                a = attr.strip(text)
                content = a.content
                item = parser.feed(content, cnt + 1)
                rank, kind, host, via = a.rank, a.rank_kind, a.host, a.rank_via
                if rank is None and file_rank is not None:
                    rank, kind, via = file_rank, file_kind, "file-name"
                if rank is None and item is not None and item.rank is not None:
                    rank, kind, host, via = (
                        item.rank,
                        "global",
                        host or item.host,
                        "elastic-summary",
                    )
                proc = attr.process(content) if attr.processes.rx and content else None
                if proc is not None:
                    pmap.learn(proc, rank, kind, host)
                late: dict = {}  # what resolves the rank after the scan when the line has none
                if rank is None:
                    late = {"process": proc, "weak_rank": attr.weak_rank(content)}
                at = offset + st - lo
                cb = content.encode("utf-8")
                for bi in self.banners.found(cb):
                    m = self.banners.rx[bi].search(cb)
                    if m:
                        pkg, gi = self.banner_meta[bi]
                        printed[pkg].add(m.group(gi).decode("utf-8", "replace"))
                m = WORLD_SIZE.search(cb)
                if m:
                    world.append(int(m.group(1)))
                if rank is not None:
                    seen_ranks.add(rank)
                if content and facts.wants(content):
                    if facts.observe(si, content, cnt + 1, rank, text) == "header":
                        self._table_rows(si, block, end, hi, cnt + 1, rank, facts)
                sigs = signals(content, cb)
                exc = bool(content) and not sigs and self.exception_rx.search(cb)
                if exc or (not sigs and content and self.salient_rx.search(cb)):
                    # An error no signal explains: one the knowledge base does not know. Keep
                    # the first exception and the first other error line per rank (bounded).
                    ukey = (si, rank, host, bool(exc))
                    if ukey not in unexplained_seen and len(unexplained) < MAX_UNEXPLAINED:
                        unexplained_seen.add(ukey)
                        ts = self._time_of(lookback, text, block, lo, st, at, end, hi)
                        scope_key: tuple = (
                            ("rank", rank, host) if rank is not None else ("stream", si)
                        )
                        unexplained.append(
                            Hit(
                                si,
                                at,
                                cnt + 1,
                                cnt,
                                scope_key,
                                rank,
                                host,
                                ts,
                                text,
                                rank_via=via,
                                **late,
                            )
                        )
                    continue
                if not sigs or self.boilerplate.found(cb):
                    continue
                if rank is not None:
                    key: tuple = ("rank", rank, host if kind == "local" else None)
                else:
                    key = ("stream", si)
                # Counted before the costly part (time, window line): in a hit-dense log most
                # lines are beyond their quota and need neither.
                if not self._keep_hit(key, sigs):
                    continue
                ts = self._time_of(lookback, text, block, lo, st, at, end, hi)
                rank_line: int | None = cnt
                if a.prefix and rank is not None and not self.window_signals.isdisjoint(sigs):
                    lit = a.prefix.rstrip().encode("utf-8", "replace")
                    if raw.startswith(lit):
                        rank_line = rank_lines.index(lit, block, lo, st)
                if rank_line is None:
                    rank_line = cnt
                hits.append(
                    Hit(
                        source=si,
                        offset=at,
                        line=cnt + 1,
                        rank_line=rank_line,
                        key=key,
                        rank=rank,
                        host=host,
                        time=ts,
                        text=text,
                        signals=frozenset(sigs),
                        rank_via=via,
                        **late,
                    )
                )
            if counts is not None:
                lines_before += total
            else:
                lines_before = cnt + block.count(b"\n", cnt_pos, hi)
            rank_lines.end_block(block, lo, hi)
            lookback.end_block(block, lo, hi, offset)
            offset += hi - lo
        if offset and not lines_before:
            lines_before = 1
        elif offset:
            # a last line without a newline still counts
            pass
        run.tails.append((si, tail, lines_before, raw_off > TAIL_BYTES))
        return lines_before, offset
