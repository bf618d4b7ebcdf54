"""A conservative static check for regexes that are super-linear under backtracking.

The engine runs signal patterns with RE2 (linear whatever the pattern), but the rule pack is for
other consumers too: JavaScript and Python run regexes by backtracking, where some patterns take
exponential or polynomial time on a hostile line. `problems(pattern)` finds the shapes that do,
from the parse tree (Python's own regex parser), without running anything:

- nested-quantifier: an unbounded repeat inside an unbounded repeat, `(a+)+`, `(\\s*\\S+)*`
  (exponential);
- overlapping-alternation: an unbounded repeat of alternatives that can start with the same
  character, `(a|ab)*`, `(\\w|\\d)+` (exponential);
- overlapping-quantifiers: two unbounded repeats in sequence that can both take the same
  characters, with nothing between them that only one of them takes, `\\S*gcc[^ ]*:`,
  `\\s*\\s*x` (polynomial in one match attempt);
- restart-quadratic: an unbounded repeat, followed by something that can fail, that can run
  over the text where the next match attempt starts: the prefix before it is empty or made of
  characters it takes, `\\S+ is not`, `pdsh@\\S+: ` (quadratic: every start rescans the rest).

It is conservative (it may refuse a pattern that is in fact fast) on purpose; a refused pattern
can always be rewritten, usually by dropping a quantifier the match does not need or by making
the repeated class exclude the character that ends it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

try:  # Python 3.11+
    import re._constants as C
    import re._parser as P
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as C  # type: ignore[no-redef]
    import sre_parse as P  # type: ignore[no-redef]

# Characters are modelled by a finite alphabet: every ASCII code plus one stand-in for all
# other code points. Enough to tell classes apart (\S vs ' ', [0-9] vs '.').
OTHER = 128
ALL = frozenset(range(129))
NEWLINE = frozenset({10})
# A repeat allowing more than BOUNDED repetitions counts as unbounded (a bounded one costs a
# constant factor). Inside another repeat, any repeat of variable count counts (nesting
# multiplies the ways to split a line: `(a{1,9}){1,9}` is as bad as `(a+)+`).
BOUNDED = 255
# The restart case needs the next attempt to start within the text the repeat scans; with a
# prefix of at least this many characters, a line holds at most len/RESTART_PREFIX attempts.
RESTART_PREFIX = 8


@dataclass(frozen=True)
class Finding:
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


def _category(cat: int) -> frozenset[int]:
    digits = frozenset(range(48, 58))
    space = frozenset({9, 10, 11, 12, 13, 32, OTHER})  # OTHER: Unicode spaces exist
    word = digits | frozenset(range(65, 91)) | frozenset(range(97, 123)) | {95, OTHER}
    table = {
        C.CATEGORY_DIGIT: digits,
        C.CATEGORY_NOT_DIGIT: ALL - digits | {OTHER},
        C.CATEGORY_SPACE: space,
        C.CATEGORY_NOT_SPACE: ALL - space | {OTHER},
        C.CATEGORY_WORD: word,
        C.CATEGORY_NOT_WORD: ALL - word | {OTHER},
    }
    return table.get(cat, ALL)


def _code(c: int) -> int:
    return c if c < 128 else OTHER


def _fold(s: frozenset[int], icase: bool) -> frozenset[int]:
    if not icase:
        return s
    out = set(s)
    for c in s:
        if 65 <= c <= 90:
            out.add(c + 32)
        elif 97 <= c <= 122:
            out.add(c - 32)
    return frozenset(out)


def _class(op, av, icase: bool) -> frozenset[int] | None:  # noqa: ANN001
    """The characters one single-character item matches, or None if it is not one."""
    if op == C.LITERAL:
        return _fold(frozenset({_code(av)}), icase)
    if op == C.NOT_LITERAL:
        return ALL - _fold(frozenset({_code(av)}), icase) | {OTHER}
    if op == C.ANY:
        return ALL - NEWLINE
    if op == C.IN:
        chars: set[int] = set()
        negate = False
        for iop, iav in av:
            if iop == C.NEGATE:
                negate = True
            elif iop == C.LITERAL:
                chars.add(_code(iav))
            elif iop == C.RANGE:
                lo, hi = iav
                chars.update(_code(c) for c in range(lo, min(hi, 200) + 1))
                if hi >= 128:
                    chars.add(OTHER)
            elif iop == C.CATEGORY:
                chars |= _category(iav)
        s = _fold(frozenset(chars), icase)
        return (ALL - s) | {OTHER} if negate else s
    return None


class _Checker:
    def __init__(self, icase: bool) -> None:
        self.icase = icase
        self.findings: list[Finding] = []

    # --- properties of a sequence of items --------------------------------------------------
    def first(self, seq) -> frozenset[int]:  # noqa: ANN001
        """Characters a match of `seq` can start with (over-approximated)."""
        out: set[int] = set()
        for op, av in seq:
            f, nullable = self.item_first(op, av)
            out |= f
            if not nullable:
                break
        return frozenset(out)

    def item_first(self, op, av) -> tuple[frozenset[int], bool]:  # noqa: ANN001
        cls = _class(op, av, self.icase)
        if cls is not None:
            return cls, False
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, _hi, sub = av
            return self.first(sub), lo == 0 or self.nullable(sub)
        if op == C.SUBPATTERN:
            return self.first(av[-1]), self.nullable(av[-1])
        if op == C.ATOMIC_GROUP:
            return self.first(av), self.nullable(av)
        if op == C.BRANCH:
            out: set[int] = set()
            nullable = False
            for b in av[1]:
                out |= self.first(b)
                nullable = nullable or self.nullable(b)
            return frozenset(out), nullable
        return frozenset(), True  # anchors, \b, group references: zero-width here

    def nullable(self, seq) -> bool:  # noqa: ANN001
        return all(self.item_first(op, av)[1] for op, av in seq)

    def chars(self, seq) -> frozenset[int]:  # noqa: ANN001
        """Every character a match of `seq` can contain."""
        out: set[int] = set()
        for op, av in seq:
            cls = _class(op, av, self.icase)
            if cls is not None:
                out |= cls
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
                out |= self.chars(av[2])
            elif op == C.SUBPATTERN:
                out |= self.chars(av[-1])
            elif op == C.ATOMIC_GROUP:
                out |= self.chars(av)
            elif op == C.BRANCH:
                for b in av[1]:
                    out |= self.chars(b)
        return frozenset(out)

    def barrier(self, seq, cls: frozenset[int]) -> bool:  # noqa: ANN001
        """True if every match of `seq` contains a character outside `cls` (so a repeat of
        `cls` cannot run across it)."""
        for op, av in seq:
            if op == C.AT and av in (C.AT_BEGINNING, C.AT_BEGINNING_STRING):
                return True  # only one attempt gets past a start anchor
            c = _class(op, av, self.icase)
            if c is not None:
                if not (c & cls):
                    return True
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
                if av[0] >= 1 and self.barrier(av[2], cls):
                    return True
            elif op == C.SUBPATTERN:
                if self.barrier(av[-1], cls):
                    return True
            elif op == C.ATOMIC_GROUP:
                if self.barrier(av, cls):
                    return True
            elif op == C.BRANCH:
                if all(self.barrier(b, cls) for b in av[1]):
                    return True
        return False

    # --- the checks -----------------------------------------------------------------------
    def walk(self, seq, in_repeat: bool) -> None:  # noqa: ANN001
        for op, av in seq:
            if op in (C.MAX_REPEAT, C.MIN_REPEAT):
                lo, hi, sub = av
                variable = hi > 1 and hi != lo
                if variable and in_repeat:
                    self.add("nested-quantifier", "a variable repeat inside another one")
                if _unbounded(hi):
                    self.alternation(sub)
                self.walk(sub, in_repeat or variable)
            elif op == C.SUBPATTERN:
                self.walk(av[-1], in_repeat)
            elif op == C.ATOMIC_GROUP:
                self.walk(av, in_repeat)
            elif op == C.BRANCH:
                for b in av[1]:
                    self.walk(b, in_repeat)

    def alternation(self, sub) -> None:  # noqa: ANN001
        """Alternatives under an unbounded repeat that can start alike."""
        items = list(sub)
        while len(items) == 1 and items[0][0] == C.SUBPATTERN:
            items = list(items[0][1][-1])
        if len(items) == 1 and items[0][0] == C.BRANCH:
            firsts = [self.first(b) for b in items[0][1][1]]
            for i in range(len(firsts)):
                for j in range(i + 1, len(firsts)):
                    if firsts[i] & firsts[j]:
                        self.findings.append(
                            Finding(
                                "overlapping-alternation",
                                "alternatives under an unbounded repeat can start with the "
                                "same character",
                            )
                        )
                        return

    def min_len(self, seq) -> int:  # noqa: ANN001
        n = 0
        for op, av in seq:
            if _class(op, av, self.icase) is not None:
                n += 1
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
                n += av[0] * self.min_len(av[2])
            elif op == C.SUBPATTERN:
                n += self.min_len(av[-1])
            elif op == C.ATOMIC_GROUP:
                n += self.min_len(av)
            elif op == C.BRANCH:
                n += min(self.min_len(b) for b in av[1])
        return n

    def sequences(self, seq, prefix: list | None, after: list) -> None:  # noqa: ANN001
        """Overlapping quantifiers along `seq` (followed by `after`), and the restart case
        when `prefix` (what precedes `seq` in the whole pattern) is known."""
        items = list(seq)
        for i, (op, av) in enumerate(items):
            rest = items[i + 1 :] + after
            before = None if prefix is None else prefix + items[:i]
            if op in (C.MAX_REPEAT, C.MIN_REPEAT):
                lo, hi, sub = av
                self.sequences(list(sub), None, [])
                if not _unbounded(hi):
                    continue
                cls = self.chars(list(sub))
                if self.nullable(rest):
                    continue  # nothing after it can fail: a greedy repeat just ends
                self.overlap(cls, rest)
                if (
                    before is not None
                    and not self.barrier(before, cls)
                    and self.min_len(before) < RESTART_PREFIX
                ):
                    self.add(
                        "restart-quadratic",
                        "an unbounded repeat can run over where the next match attempts start "
                        f"(its prefix is shorter than {RESTART_PREFIX} characters, all of which "
                        "it takes): every start rescans the rest of the line",
                    )
            elif op == C.SUBPATTERN:
                self.sequences(list(av[-1]), before, rest)
            elif op == C.ATOMIC_GROUP:
                self.sequences(list(av), before, rest)
            elif op == C.BRANCH:
                for b in av[1]:
                    self.sequences(list(b), before, rest)

    def overlap(self, cls: frozenset[int], rest: list, between: list | None = None) -> None:  # noqa: ANN001
        """A later unbounded repeat reachable from one over `cls` through text both take."""
        between = list(between or [])
        for k, (kop, kav) in enumerate(rest):
            if kop in (C.MAX_REPEAT, C.MIN_REPEAT) and _unbounded(kav[1]):
                other = self.chars(list(kav[2]))
                if (
                    cls & other
                    and not self.barrier(between, cls)
                    and not self.barrier(between, other)
                    and not self.nullable(rest[k + 1 :])
                ):
                    self.add(
                        "overlapping-quantifiers",
                        "two unbounded repeats in a row can take the same text",
                    )
                return
            if kop in (C.SUBPATTERN, C.BRANCH, C.ATOMIC_GROUP):
                if kop == C.SUBPATTERN:
                    alternatives = [list(kav[-1])]
                elif kop == C.ATOMIC_GROUP:
                    alternatives = [list(kav)]
                else:
                    alternatives = [list(b) for b in kav[1]]
                for alt in alternatives:
                    self.overlap(cls, alt + rest[k + 1 :], between)
                return
            if self.barrier([rest[k]], cls):
                return
            between.append(rest[k])

    def add(self, kind: str, detail: str) -> None:
        self.findings.append(Finding(kind, detail))


def _unbounded(hi: int) -> bool:
    return hi == C.MAXREPEAT or hi > BOUNDED


def problems(pattern: str, ignore_case: bool = False) -> list[Finding]:
    """Why `pattern` can be super-linear under a backtracking engine ([] if it cannot)."""
    try:
        tree = P.parse(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error:
        return []  # reported by the compile check
    c = _Checker(ignore_case or bool(tree.state.flags & re.IGNORECASE))
    items = list(tree)
    c.walk(items, False)
    c.sequences(items, [], [])
    seen: set[str] = set()
    out = []
    for f in c.findings:
        if f.kind not in seen:
            seen.add(f.kind)
            out.append(f)
    return out
