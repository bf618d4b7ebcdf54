"""Signal patterns must be linear for backtracking consumers of the rule pack too."""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex_kb.kb import KBError, load_kb
from denpex_kb.redos import problems

from .conftest import ROOT

BAD = {
    r"(a+)+$": "nested-quantifier",
    r"(\s*\S+)*x": "nested-quantifier",
    r"(a{1,9}){1,9}b": "nested-quantifier",
    r"\s*\s*x": "overlapping-quantifiers",
    r"\S*(gcc|cc)[^ ]*: not found": "overlapping-quantifiers",
    r"bind to \S+.*EADDRINUSE": "overlapping-quantifiers",
    r"\S+ is not a supported": "restart-quadratic",
    r"pdsh@\S+: \S+: ssh exited": "restart-quadratic",
    r"([2-9]|[1-9][0-9]+)\.[0-9]+ GiB": "restart-quadratic",
}
GOOD = [
    r"CUDA out of memory\. Tried to allocate [0-9.]+ [KMG]iB",
    r"\S is not a supported DeepSpeed Optimizer",
    r"pdsh@[^\s@]+: \S+: ssh exited with exit code 255",
    r"(?:^|[^0-9])(?:0*[1-9][0-9]*[0-9]|[0-9]*[2-9])\.[0-9]+ GiB is reserved",
    r"--hostfile[= ]\S+",
    r"No such file or directory: '[^']*(gcc|cc)[^'/]{0,255}'",
]


@pytest.mark.parametrize("pattern, kind", sorted(BAD.items()))
def test_checker_refuses_super_linear_shapes(pattern: str, kind: str) -> None:
    assert kind in [f.kind for f in problems(pattern)]


@pytest.mark.parametrize("pattern", GOOD)
def test_checker_accepts_linear_patterns(pattern: str) -> None:
    assert problems(pattern) == []


def test_every_bundled_pattern_passes_the_checker() -> None:
    kb = load_kb(ROOT / "kb")
    bad = [(e.id, s.id) for e in kb.entries for s in e.signals if problems(s.pattern)]
    assert bad == []


def test_validate_reports_a_super_linear_pattern(kb_copy: Path) -> None:
    entry = kb_copy / "config" / "hostile-entry.yaml"
    entry.write_text(
        entry.read_text().replace("pattern: 'HOSTILE_MARKER_SIGNAL'", r"pattern: '(\s*\S+)*:X'")
    )
    with pytest.raises(KBError) as exc:
        load_kb(kb_copy)
    msgs = [str(p) for p in exc.value.problems]
    assert any("signals[0].pattern: regex is super-linear under backtracking" in m for m in msgs)


def test_key_error_lines_use_re2(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub pulls key lines from examples with RE2: Python's `re` is not consulted."""
    import re

    from denpex_kb import site

    kb = load_kb(ROOT / "tests" / "fixtures" / "hostile-kb")
    real_compile = re.compile

    def no_python_re_for_signals(pattern, flags=0):  # noqa: ANN001, ANN202
        assert pattern != "HOSTILE_MARKER_SIGNAL", "signal compiled with Python re"
        return real_compile(pattern, flags)

    monkeypatch.setattr(re, "compile", no_python_re_for_signals)
    assert site.key_error_lines(kb.entries[0])
