"""YAML bombs and broken files: one located problem each, bounded work, no cascade."""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex_kb import yamlsrc
from denpex_kb.kb import KBError, load_kb

from .conftest import Cli, stderr_lines


def _bomb(prefix: str = "") -> str:
    """The 9x9 "billion laughs": 9**9 = 387,420,489 values once expanded."""
    lines = [f"{prefix}a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, cur in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{prefix}{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _only_problem(kb: Path) -> str:
    with pytest.raises(KBError) as exc:
        load_kb(kb)
    assert len(exc.value.problems) == 1, [str(p) for p in exc.value.problems]
    return str(exc.value.problems[0])


def test_alias_bomb_in_an_entry_is_one_located_problem(kb_copy: Path) -> None:
    (kb_copy / "config" / "bomb.yaml").write_text(_bomb())
    msg = _only_problem(kb_copy)
    assert "bomb.yaml:" in msg and "expands to more than" in msg
    line, col = msg.split("bomb.yaml:")[1].split(":")[:2]
    assert int(line) >= 1 and int(col) >= 1


def test_alias_bomb_in_an_unknown_field_of_a_valid_entry(kb_copy: Path) -> None:
    entry = kb_copy / "config" / "hostile-entry.yaml"
    entry.write_text(entry.read_text() + "extra:\n" + _bomb("  "))
    msg = _only_problem(kb_copy)
    assert "hostile-entry.yaml:" in msg and "expands to more than" in msg


def test_alias_bomb_in_tags_yaml(kb_copy: Path) -> None:
    tags = kb_copy / "tags.yaml"
    tags.write_text(tags.read_text() + _bomb("zz-"))
    msg = _only_problem(kb_copy)  # one problem: entries are not then flagged for their tags
    assert "tags.yaml:" in msg and "expands to more than" in msg


def test_the_budget_bounds_the_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """The builder visits at most MAX_VALUES values, whatever the aliases promise."""
    visited = []
    real = yamlsrc._pos

    def counting(node):  # noqa: ANN001, ANN202
        visited.append(1)
        return real(node)

    monkeypatch.setattr(yamlsrc, "_pos", counting)
    with pytest.raises(yamlsrc.YamlProblem):
        yamlsrc.load_located(_bomb())
    assert len(visited) <= yamlsrc.MAX_VALUES + 20  # values, plus the few mapping keys


@pytest.mark.parametrize("flow", [True, False])
def test_deep_nesting_is_one_located_problem(kb_copy: Path, flow: bool) -> None:
    if flow:
        text = "a: " + "[" * 1500 + "]" * 1500 + "\n"
    else:
        text = "a:\n" + "".join("  " * i + "k:\n" for i in range(1, 1500))
    (kb_copy / "config" / "deep.yaml").write_text(text)
    msg = _only_problem(kb_copy)
    assert "deep.yaml:" in msg and f"deeper than {yamlsrc.MAX_DEPTH}" in msg


def test_one_broken_entry_does_not_cascade(tmp_path: Path) -> None:
    """Entries that name a broken entry as a look-alike do not report it as unknown."""
    import shutil

    from .conftest import ROOT

    kb = tmp_path / "kb"
    shutil.copytree(ROOT / "kb", kb, ignore=shutil.ignore_patterns("captured"))
    shutil.copytree(ROOT / "kb" / "captured", kb / "captured")
    victim = kb / "config" / "config-syntax-error.yaml"
    victim.write_text(victim.read_text() + "\n  broken: [\n")
    msg = _only_problem(kb)
    assert "config-syntax-error.yaml" in msg and "YAML syntax error" in msg


def test_non_utf8_byte_is_located(kb_copy: Path) -> None:
    entry = kb_copy / "config" / "hostile-entry.yaml"
    data = entry.read_bytes().replace(b"framework: deepspeed", b"framework: deep\xe9speed")
    entry.write_bytes(data)
    line_no = data[: data.index(b"\xe9")].count(b"\n") + 1
    msg = _only_problem(kb_copy)
    assert f"hostile-entry.yaml:{line_no}:16:" in msg and "not UTF-8" in msg


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_entry_that_is_not_a_regular_file_is_refused_unread(
    kb_copy: Path, cli: Cli, kind: str
) -> None:
    import os

    target = kb_copy / "config" / "special.yaml"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    proc = cli("validate", str(kb_copy))  # would hang or grow without the check
    assert proc.returncode == 1
    lines = stderr_lines(proc)
    assert len(lines) == 2 and "special.yaml:1:1: (file): not a regular file" in lines[0]
    assert lines[1] == "denpex-kb: 1 problem(s) found"


def test_c_composer_gives_the_same_values_and_positions_as_the_python_one() -> None:
    """The fast path (libyaml) must be indistinguishable from the reference composer on every
    bundled entry, aliases and flow collections included."""
    from pathlib import Path

    from denpex_kb.yamlsrc import C_LOADER, load_located

    if C_LOADER is None:
        pytest.skip("PyYAML built without libyaml")
    files = sorted((Path(__file__).resolve().parents[2] / "kb").rglob("*.yaml"))
    assert len(files) > 100
    extra = ["a: &x [1, {b: 2}]\nc: [*x, *x]\n", "k: |\n  multi\n  line\nl: 'q'\n"]
    for text in [f.read_text(encoding="utf-8") for f in files] + extra:
        assert load_located(text) == load_located(text, use_c=False)


@pytest.mark.parametrize("use_c", [True, False])
def test_depth_limit_is_the_same_on_both_composers(use_c: bool) -> None:
    from denpex_kb.yamlsrc import MAX_DEPTH, YamlProblem, load_located

    load_located("[" * MAX_DEPTH + "]" * MAX_DEPTH, use_c=use_c)
    with pytest.raises(YamlProblem) as exc:
        load_located("x:\n" + "".join("  " * i + "- \n" for i in range(MAX_DEPTH + 5)), use_c=use_c)
    assert "nested deeper" in exc.value.message
