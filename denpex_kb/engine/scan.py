"""Step 4, scan: find, in a whole block of bytes at once, the few lines any rule could care about.

A multi-pattern prefilter runs over each block (Hyperscan when the optional `hyperscan` wheel is
installed, else one RE2 alternation with never_nl). It is a superset filter: each pattern is the
rule's own regex with its `^`/`$` anchors removed (removing a zero-width assertion can only add
matches), so every line a rule matches after prefix stripping is found. Only those lines are
decoded, normalised, attributed and checked exactly (an RE2 set over the line's text).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable

from .rules import cache_dir


def deanchor(pattern: str) -> str:
    """Remove `^` and `$` outside character classes (escapes respected)."""
    if "^" not in pattern and "$" not in pattern:
        return pattern  # most patterns: nothing to walk (start-up cost)
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "]" and not (out and out[-1] in ("[", "[^")):
                in_class = False
            out.append(c)
        elif c == "[":
            in_class = True
            if pattern.startswith("[^", i):
                out.append("[^")
                i += 2
                if i < n and pattern[i] == "]":
                    out.append("]")
                    i += 1
                continue
            out.append(c)
            if i + 1 < n and pattern[i + 1] == "]":
                out.append("]")
                i += 1
        elif c in "^$":
            pass
        else:
            out.append(c)
        i += 1
    return "".join(out)


class _Re2Prefilter:
    name = "re2"

    def __init__(self, patterns: list[tuple[str, bool]]) -> None:
        import re2

        opts = re2.Options()
        opts.max_mem = 256 << 20
        opts.never_nl = True
        opts.log_errors = False
        opts.never_capture = True
        alt = "|".join(f"(?:{'(?i)' if icase else ''}{p})" for p, icase in patterns)
        self._rx = re2.compile(alt.encode("utf-8"), opts)

    def line_starts(self, block: bytes, lo: int, hi: int) -> list[int]:
        out: list[int] = []
        search = self._rx.search
        pos = lo
        while pos < hi:
            m = search(block, pos, hi)
            if m is None:
                break
            s = m.start()
            out.append(max(block.rfind(b"\n", lo, s) + 1, lo))
            nl = block.find(b"\n", max(s, m.end() - 1), hi)
            if nl == -1:
                break
            pos = nl + 1
        return sorted(set(out))


class _HyperscanPrefilter:
    name = "hyperscan"

    def __init__(self, patterns: list[tuple[str, bool]]) -> None:
        import hyperscan as hs

        exprs = [p.encode("utf-8") for p, _ in patterns]
        flags = [hs.HS_FLAG_ALLOWEMPTY | (hs.HS_FLAG_CASELESS if ic else 0) for _, ic in patterns]
        key = hashlib.sha256(
            repr((hs.__version__, exprs, flags)).encode("utf-8", "surrogatepass")
        ).hexdigest()[:32]
        path = cache_dir() / f"hs-{key}.db"
        db = None
        try:
            db = hs.loadb(path.read_bytes(), hs.HS_MODE_BLOCK)
            db.scratch = hs.Scratch(db)
        except Exception:  # missing, stale or from another platform: compile it
            db = None
        if db is None:
            db = hs.Database(mode=hs.HS_MODE_BLOCK)
            try:
                db.compile(expressions=exprs, ids=list(range(len(exprs))), flags=flags)
            except hs.error:
                # Some constructs are outside Hyperscan's dialect: prefilter mode is a superset.
                flags = [f | hs.HS_FLAG_PREFILTER for f in flags]
                db = hs.Database(mode=hs.HS_MODE_BLOCK)
                db.compile(expressions=exprs, ids=list(range(len(exprs))), flags=flags)
            try:
                from ..rulepack import write_atomic

                write_atomic(path, hs.dumpb(db))
            except OSError:
                pass
        self._db = db

    def line_starts(self, block: bytes, lo: int, hi: int) -> list[int]:
        ends: list[int] = []
        append = ends.append
        last = [-1]  # end of the line of the last recorded match: skip repeats on one line

        def on_match(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            if to > last[0]:
                append(to)
                nl = block.find(b"\n", lo + max(to - 1, 0), hi)
                last[0] = (nl if nl != -1 else hi) - lo

        view = memoryview(block)[lo:hi] if (lo, hi) != (0, len(block)) else block
        self._db.scan(view, match_event_handler=on_match)
        if not ends:
            return ends
        return sorted({max(block.rfind(b"\n", lo, lo + max(e - 1, 0)) + 1, lo) for e in ends})


def line_finder(pattern: str):  # noqa: ANN201 - re2._Regexp
    """One pattern, de-anchored, for searching a region of a block (matches never span lines)."""
    import re2

    opts = re2.Options()
    opts.never_nl = True
    opts.log_errors = False
    opts.never_capture = True
    return re2.compile(deanchor(pattern).encode("utf-8"), opts)


def make_prefilter(patterns: Iterable[tuple[str, bool]], backend: str | None = None):  # noqa: ANN201
    """The fastest available prefilter; DENPEX_KB_SCANNER=re2|hyperscan forces one."""
    pats = [(deanchor(p), ic) for p, ic in patterns]
    choice = backend or os.environ.get("DENPEX_KB_SCANNER", "auto")
    if choice in ("auto", "hyperscan"):
        try:
            return _HyperscanPrefilter(pats)
        except ImportError:
            if choice == "hyperscan":
                raise
    return _Re2Prefilter(pats)
