"""The exact check of candidate lines (engine/signals.py) gives, line for line, the signals an
RE2 set of every signal gives, whether Hyperscan names the exact signals or RE2 checks them:
on the lines of every entry's examples, on copies with a non-ASCII character, a vertical tab or
swapped case written in, and on constructed patterns whose meaning differs between the two
engines."""

from __future__ import annotations

import random

import pytest
import re2

from denpex_kb.engine import load_rulepack
from denpex_kb.engine.scan import make_prefilter
from denpex_kb.engine.signals import SignalMatcher, same_in_hyperscan

hs = pytest.importorskip("hyperscan", reason="Hyperscan wheel not available on this platform")


@pytest.mark.parametrize(
    ("pattern", "same"),
    [
        ("No space left on device", True),
        ("(?:CUDA|HIP) error: out of memory", True),
        ("\\d+ bytes \\(\\w+\\)\\.", True),
        ("\\bfailed\\b: [0-9a-f]+", True),
        ("(?i)killed", False),  # RE2 folds the Kelvin sign into k, Hyperscan does not
        ("a\\vb", False),  # \v: RE2 a vertical tab, Hyperscan any vertical space
        ("\\x{2018}", False),
        ("\\pL+", False),
        ("\\Aabc\\z", False),
        ("caf\u00e9", False),
        ("a\\", False),
    ],
)
def test_which_patterns_mean_the_same_to_both_engines(pattern: str, same: bool) -> None:
    assert same_in_hyperscan(pattern) is same


def _reference(pats: list[tuple[str, bool]]):  # noqa: ANN202 - re2.Set
    ref = re2.Set.SearchSet(re2.Options())
    for p, ic in pats:
        ref.Add(("(?i)" if ic else "") + p)
    ref.Compile()
    return ref


def _variants(lines: set[str]) -> list[str]:
    rnd = random.Random(11)
    out = set(lines)
    for ln in sorted(lines):
        if len(ln) > 3:
            k = rnd.randrange(len(ln))
            out.add(ln[:k] + rnd.choice("é‘中\x0b\u212a") + ln[k + 1 :])
            out.add(ln.swapcase())
            out.add(ln.replace(" ", "\x0b", 1))
    return sorted(out)


def test_the_pack_signals_match_as_an_re2_set_would(kb) -> None:  # noqa: ANN001
    pack = load_rulepack()
    pats = [(s["pattern"], s["ignore_case"]) for e in pack["entries"] for s in e["signals"]]
    matcher = SignalMatcher(pats, make_prefilter(pats, "hyperscan"))
    assert matcher.exact is not None and 0 < sum(matcher.exact) < len(pats)
    ref = _reference(pats)
    lines = _variants(
        {ln for e in kb.entries for ex in e.examples for ln in (ex.log or "").splitlines()}
    )
    assert len(lines) > 5000
    wrong = [ln for ln in lines if matcher.match(ln, ln.encode()) != sorted(ref.Match(ln) or [])]
    assert not wrong, wrong[:5]
    assert sum(bool(ref.Match(ln)) for ln in lines) > 1000  # the lines do hit signals


@pytest.mark.parametrize(
    ("pattern", "line", "hit"),
    [
        ("^Error: x$", "Error: x", True),
        ("^Error: x$", "an Error: x!", False),  # anchors: the scan's pattern is a superset
        ("a\\sb", "a\x0bb", False),  # \s: Hyperscan takes the vertical tab, RE2 does not
        ("a\\Sb", "a\x0bb", True),
        ("(?i)kill", "\u212aill", True),
        ("killed", "KILLED", False),
        ("x.y", "x\u4e2dy", True),
    ],
)
def test_patterns_the_engines_read_differently(pattern: str, line: str, hit: bool) -> None:
    pats = [(pattern, False), ("unrelated", False)]
    matcher = SignalMatcher(pats, make_prefilter(pats, "hyperscan"))
    assert matcher.match(line, line.encode()) == ([0] if hit else [])
    assert bool(re2.search(pattern, line)) is hit


def test_without_hyperscan_the_re2_set_checks_every_line() -> None:
    pats = [("No space left", False), ("^x$", False)]
    matcher = SignalMatcher(pats, make_prefilter(pats, "re2"))
    assert matcher.exact is None
    assert matcher.match("[Errno 28] No space left on device", b"") == [0]
    assert matcher.match("x", b"x") == [1] and matcher.match("", b"") == []
