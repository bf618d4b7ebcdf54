"""Step 4, scan: find, in a whole block of bytes at once, the few lines any rule could care about.

A multi-pattern prefilter runs over each block (Hyperscan when the optional `hyperscan` wheel is
installed, else one RE2 alternation with never_nl). It is a superset filter: each pattern is the
rule's own regex with its `^`/`$` anchors removed (removing a zero-width assertion can only add
matches), so every line a rule matches after prefix stripping is found. Only those lines are
decoded, normalised, attributed and checked exactly (signals.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..digest import sha256
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


# --- Hyperscan reads bytes, RE2 reads UTF-8 -------------------------------------------------
# A `.`, a negated class, `\S`/`\W`/`\D` match one codepoint in RE2 (1-4 bytes) but one byte in
# Hyperscan; a class member outside ASCII is several bytes. Rewritten as below, each pattern
# still matches (at least) every line the RE2 pattern matches, which is all a prefilter needs.


def _class_end(p: str, i: int) -> int:
    """Index just past the character class starting at p[i] == '['."""
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":
        j += 1  # a leading ']' is a member
    while j < len(p):
        if p[j] == "\\":
            j += 2
            continue
        if p[j] == "[" and p.startswith("[:", j):
            k = p.find(":]", j + 2)
            j = k + 2 if k != -1 else j + 1
            continue
        if p[j] == "]":
            return j + 1
        j += 1
    return len(p)


def _quantifier(p: str, i: int) -> tuple[str, int]:
    """The quantifier at p[i:] (with a lazy '?'), and the index after it."""
    if i >= len(p):
        return "", i
    if p[i] in "*+?":
        j = i + 1
    elif p[i] == "{":
        k = p.find("}", i)
        body = p[i + 1 : k] if k != -1 else ""
        if (
            k == -1
            or not body
            or not all(c.isdigit() or c == "," for c in body)
            or not body[0].isdigit()
        ):
            return "", i  # a literal '{'
        j = k + 1
    else:
        return "", i
    if j < len(p) and p[j] == "?":
        j += 1
    return p[i:j], j


def _widen(q: str) -> str:
    """The quantifier for one codepoint-wide atom matched byte by byte (1-4 bytes each)."""
    lazy = "?" if len(q) > 1 and q.endswith("?") else ""
    core = q[:-1] if lazy else q
    if core == "":
        return "{1,4}"
    if core == "?":
        return "{0,4}" + lazy
    if core in ("*", "+"):
        return core + lazy
    body = core[1:-1]
    if "," not in body:
        m = int(body)
        return f"{{{m},{4 * m}}}{lazy}"
    lo, hi = body.split(",", 1)
    return (f"{{{lo},}}" if hi == "" else f"{{{lo},{4 * int(hi)}}}") + lazy


def _split_class(cls: str) -> str:
    """A positive class with non-ASCII members, as an alternation of its ASCII part (a class)
    and each non-ASCII member's UTF-8 literal; a range reaching past ASCII becomes any
    2-4-byte sequence."""
    body = cls[1:-1]
    ascii_part: list[str] = []
    alts: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            ascii_part.append(body[i : i + 2])
            i += 2
            continue
        if i + 2 < len(body) and body[i + 1] == "-" and body[i + 2] != "]":
            lo, hi = c, body[i + 2]
            if ord(hi) < 128:
                ascii_part.append(body[i : i + 3])
            else:
                if ord(lo) < 128:
                    ascii_part.append(f"{lo}-\\x7f" if lo != "\\" else "\\\\-\\x7f")
                alts.append("[\\x80-\\xff]{2,4}")
            i += 3
            continue
        if ord(c) < 128:
            ascii_part.append(c)
        else:
            alts.append(c)
        i += 1
    parts = (["[" + "".join(ascii_part) + "]"] if ascii_part else []) + alts
    return "(?:" + "|".join(parts) + ")"


def byte_superset(pattern: str) -> str:
    """The pattern rewritten for a byte-oriented matcher (Hyperscan without UTF-8 mode) so that
    it matches at least every string the pattern matches in RE2's UTF-8 mode: an atom that
    matches one codepoint (`.`, a negated class, `\\S`, `\\W`, `\\D`, a class with non-ASCII
    members) may be up to 4 bytes there, so its count is widened; non-ASCII class members become
    literal alternatives."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        wide = False
        if c == "\\" and i + 1 < n:
            atom = pattern[i : i + 2]
            wide = pattern[i + 1] in "SWD"
            i += 2
        elif c == "[":
            j = _class_end(pattern, i)
            atom = pattern[i:j]
            i = j
            negated = atom.startswith("[^")
            nonascii = any(ord(ch) > 127 for ch in atom)
            if nonascii and not negated:
                atom = _split_class(atom)
            else:
                wide = negated
        elif c == ".":
            atom, wide = ".", True
            i += 1
        elif c == "(" and pattern.startswith("(?", i) and not pattern.startswith("(?:", i):
            # inline flags `(?i)` / `(?i:`, or a named group's opener `(?P<name>`
            stop = ">" if pattern.startswith("(?P<", i) else ":)"
            j = i + 2
            while j < n and pattern[j] not in stop:
                j += 1
            out.append(pattern[i : j + 1])
            i = j + 1
            continue
        else:
            out.append(c)
            i += 1
            continue
        q, i = _quantifier(pattern, i)
        out.append(f"(?:{atom}){_widen(q)}" if wide else atom + q)
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
        """`patterns`: the rules' own regexes; the anchors are removed (and the bytes widened)
        only when a database is compiled."""
        import hyperscan as hs

        flags = [hs.HS_FLAG_ALLOWEMPTY | (hs.HS_FLAG_CASELESS if ic else 0) for _, ic in patterns]
        # The key covers the patterns as given and this module's code (the rewriting below), so
        # the rewriting runs only when a database is compiled, not on every start-up.
        code = sha256(Path(__file__).read_bytes()).hexdigest()
        key = sha256(
            repr((hs.__version__, code, patterns, flags)).encode("utf-8", "surrogatepass")
        ).hexdigest()[:32]
        path = cache_dir() / f"hs-{key}.db"
        exact_path = path.with_suffix(".exact")
        db = None
        try:
            db = hs.loadb(path.read_bytes(), hs.HS_MODE_BLOCK)
            db.scratch = hs.Scratch(db)
            marks = exact_path.read_bytes()
            if len(marks) != len(patterns) or marks.strip(b"01"):
                raise ValueError(exact_path)
        except Exception:  # missing, stale or from another platform: compile it
            db = None
        if db is None:
            from .signals import same_in_hyperscan

            exprs = [byte_superset(deanchor(p)).encode("utf-8") for p, _ in patterns]
            # Patterns Hyperscan matches exactly as RE2 would: the line's scan names them and
            # no RE2 check is needed (signals.SignalMatcher).
            same = [
                not ic and x == p.encode("utf-8") and same_in_hyperscan(p)
                for (p, ic), x in zip(patterns, exprs, strict=True)
            ]
            db = hs.Database(mode=hs.HS_MODE_BLOCK)
            try:
                db.compile(expressions=exprs, ids=list(range(len(exprs))), flags=flags)
            except hs.error:
                # Some constructs are outside Hyperscan's dialect: prefilter mode is a superset.
                flags = [f | hs.HS_FLAG_PREFILTER for f in flags]
                db = hs.Database(mode=hs.HS_MODE_BLOCK)
                db.compile(expressions=exprs, ids=list(range(len(exprs))), flags=flags)
                same = [False] * len(exprs)
            marks = bytes(b"01"[x] for x in same)
            try:
                from ..atomic import write_file

                write_file(path, hs.dumpb(db))
                write_file(exact_path, marks)
            except OSError:
                pass
        self._db = db
        self.exact = [m == 0x31 for m in marks]

    def ids_in(self, line: bytes) -> list[int]:
        """The ids of the patterns that match somewhere in `line` (a superset of the exact
        matches for the patterns not marked in `exact`), sorted."""
        found: set[int] = set()

        def on_match(i: int, _from: int, _to: int, _flags: int, _ctx: object) -> None:
            found.add(i)

        self._db.scan(line, match_event_handler=on_match)
        return sorted(found)

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
    given = list(patterns)
    choice = backend or os.environ.get("DENPEX_KB_SCANNER", "auto")
    if choice in ("auto", "hyperscan"):
        try:
            return _HyperscanPrefilter(given)
        except ImportError:
            if choice == "hyperscan":
                raise
        except Exception:  # noqa: BLE001 - hyperscan.error: a pack pattern Hyperscan cannot take
            # (a bounded repeat too large once widened for bytes, say): RE2 scans what it
            # validated, more slowly but exactly as the pack says.
            if choice == "hyperscan":
                raise
    return _Re2Prefilter([(deanchor(p), ic) for p, ic in given])
