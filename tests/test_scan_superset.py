"""The Hyperscan prefilter finds every line a signal matches (engine/scan.py): Hyperscan reads
the pattern as bytes while RE2 reads UTF-8, so a `.`, a negated class or a class with a
non-ASCII member (gcc's ‘’ quotes) once made it miss lines with non-ASCII text. Checked on the
lines of every entry's examples, on copies of them with a non-ASCII character written in, and
on constructed cases."""

from __future__ import annotations

import random

import pytest
import re2

from denpex_kb.engine import load_rulepack
from denpex_kb.engine.scan import byte_superset, deanchor, make_prefilter

hs = pytest.importorskip("hyperscan", reason="Hyperscan wheel not available on this platform")

WIDE = "‘’€中│█é"


@pytest.mark.parametrize(
    ("pattern", "line"),
    [
        (
            "unrecognized command line option ['‘]-std=c\\+\\+17",
            "gcc: unrecognized command line option ‘-std=c++17’",
        ),
        ("a.b", "a€b"),
        ("x[^ ]y", "x中y"),
        ("Rank [^\\]]{0,3}\\]", "Rank €€€]"),
        ("\\S\\S:", "éé:"),
        ("[A-Z‘-’]z", "’z"),
        ("(?i)caf.", "CAFÉ"),
    ],
)
def test_the_rewritten_pattern_finds_the_line(pattern: str, line: str) -> None:
    assert re2.search(pattern, line)
    pre = make_prefilter([(pattern, False)], "hyperscan")
    data = (line + "\n").encode()
    assert pre.line_starts(data, 0, len(data)) == [0], byte_superset(pattern)


def test_ascii_only_patterns_are_left_as_they_are() -> None:
    for p in ("No space left on device", "a{3}", "[0-9]+ bytes", "(?:x|y)\\.z"):
        assert byte_superset(p) == p


def _lines(kb) -> list[str]:  # noqa: ANN001 - the KnowledgeBase fixture
    lines = {ln for e in kb.entries for ex in e.examples for ln in (ex.log or "").splitlines()}
    rnd = random.Random(7)
    for ln in sorted(lines):
        if len(ln) > 3:
            k = rnd.randrange(len(ln))
            lines.add(ln[:k] + rnd.choice(WIDE) + ln[k + 1 :])
    return sorted(lines)


def test_every_signal_line_is_a_prefilter_hit(kb) -> None:  # noqa: ANN001
    pack = load_rulepack()
    pats = [(s["pattern"], s["ignore_case"]) for e in pack["entries"] for s in e["signals"]]
    exact = re2.Set.SearchSet(re2.Options())
    for p, ic in pats:
        exact.Add(("(?i)" if ic else "") + deanchor(p))
    exact.Compile()
    pre = make_prefilter(pats, "hyperscan")
    lines = _lines(kb)
    assert len(lines) > 2000
    missed = []
    for ln in lines:
        if not exact.Match(ln):
            continue
        data = (ln + "\n").encode()
        if pre.line_starts(data, 0, len(data)) != [0]:
            missed.append(ln)
    assert not missed, missed[:5]


def test_a_pattern_hyperscan_cannot_compile_falls_back_to_re2(monkeypatch) -> None:  # noqa: ANN001
    # Every RE2-valid pattern tried compiles after the byte widening, but Hyperscan has its own
    # limits (bounded repeats, pattern size) that a contributed pattern may hit: the auto
    # scanner then scans with RE2 instead of failing. Simulated by a refusing compile.
    from denpex_kb.engine import scan

    def refuse(_patterns: object) -> None:
        raise hs.error("Bounded repeat is too large.")

    monkeypatch.setattr(scan, "_HyperscanPrefilter", refuse)
    pre = make_prefilter([("a[^x]{0,1000}b", False)], "auto")
    assert pre.name == "re2"
    assert pre.line_starts(b"a-b\n", 0, 4) == [0]
    with pytest.raises(hs.error):
        make_prefilter([("a[^x]{0,1000}b", False)], "hyperscan")
