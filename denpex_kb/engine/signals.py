"""Step 4b, confirm: which signals a line the scan found really matches.

The rule pack's regexes are RE2; the scan's patterns are supersets of them. Where Hyperscan
runs the scan, most signals are exact there (their pattern reaches Hyperscan unchanged, with
no construct whose meaning differs between the two engines), so a one-line Hyperscan scan names
them, and only the others are checked with their own RE2 regex, compiled on first use. That
spares every start-up the RE2 set of all signals (about 12 ms for 690), which is built only
where Hyperscan is absent or a line holds the one byte the engines disagree on.
"""

from __future__ import annotations

from typing import Any

# The escapes that mean the same to RE2 and Hyperscan (ASCII classes, word boundaries, escaped
# punctuation and the common control characters). Any other (\v, \h, \x{...}, \p{..}, \A, \z,
# octal, ...) makes a signal inexact, as do inline flags and non-ASCII text.
_SAME_ESCAPES = frozenset("dDwWsSbBntrf")
# Hyperscan's \s (and \S) also take the vertical tab, RE2's do not.
_VT = b"\x0b"


def same_in_hyperscan(pattern: str) -> bool:
    """Whether Hyperscan, given `pattern` as it is (no rewriting, no prefilter mode, case
    sensitive), matches exactly the lines RE2 does, vertical tabs aside."""
    if not pattern.isascii() or pattern.replace("(?:", "").count("(?"):
        return False  # inline flags: (?i) folds case beyond ASCII in RE2 only
    i, n = 0, len(pattern)
    while i < n:
        if pattern[i] == "\\":
            if i + 1 >= n:
                return False
            c = pattern[i + 1]
            if c.isalnum() and c not in _SAME_ESCAPES:
                return False
            i += 2
            continue
        i += 1
    return True


class SignalMatcher:
    """`match(content, cb)`: the indices of the signals whose regex matches the line's content
    (str) whose UTF-8 bytes are `cb`, sorted, as an RE2 set of all of them would give."""

    def __init__(self, patterns: list[tuple[str, bool]], prefilter: Any) -> None:  # noqa: ANN401
        self.patterns = patterns
        self.n = len(patterns)
        self.prefilter = prefilter
        exact = getattr(prefilter, "exact", None)
        # usable only when the prefilter's first patterns are these signals, in this order
        self.exact: list[bool] | None = exact[: self.n] if exact and len(exact) >= self.n else None
        # Case-insensitive signals are checked on every candidate line: RE2 folds a few
        # non-ASCII letters (the Kelvin sign, the long s) into ASCII ones, Hyperscan does not.
        self.folded = [i for i, (p, ic) in enumerate(patterns) if ic or "(?i" in p]
        self._set: Any = None
        self._one: dict[int, Any] = {}

    def match(self, content: str, cb: bytes) -> list[int]:
        if not content or not self.n:
            return []
        if self.exact is None or _VT in cb:
            return sorted(self._all().Match(content) or ())
        exact, n = self.exact, self.n
        ids = [i for i in self.prefilter.ids_in(cb) if i < n]
        if self.folded:
            ids = sorted(set(ids).union(self.folded))
        return [i for i in ids if exact[i] or self._regex(i).search(content) is not None]

    def _options(self) -> Any:  # noqa: ANN401 - re2.Options
        import re2

        opts = re2.Options()
        opts.max_mem = 64 << 20
        opts.log_errors = False
        return opts

    def _all(self) -> Any:  # noqa: ANN401 - re2.Set
        if self._set is None:
            import re2

            s = re2.Set.SearchSet(self._options())
            for p, ic in self.patterns:
                s.Add(("(?i)" if ic else "") + p)
            s.Compile()
            self._set = s
        return self._set

    def _regex(self, i: int) -> Any:  # noqa: ANN401 - re2._Regexp
        rx = self._one.get(i)
        if rx is None:
            import re2

            p, ic = self.patterns[i]
            rx = self._one[i] = re2.compile(("(?i)" if ic else "") + p, self._options())
        return rx
