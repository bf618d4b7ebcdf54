"""The loader refuses broken entries with file:line:col: field: message, every problem at once.

Each case copies the fixture knowledge base, breaks exactly one thing with a text edit, and
asserts the exact location and field path of the resulting message.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from denpex_kb.kb import KBError, load_kb

FIXTURE = Path(__file__).parent / "fixtures" / "kb"
ENTRY = "checkpoint/fixture-disk-full.yaml"


@pytest.fixture()
def kb_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "kb"
    shutil.copytree(FIXTURE, root)
    monkeypatch.chdir(tmp_path)  # messages show paths relative to the working directory
    return root


def edit(root: Path, old: str, new: str, rel: str = ENTRY) -> None:
    path = root / rel
    text = path.read_text()
    assert text.count(old) == 1, f"fixture edit is ambiguous or stale: {old!r}"
    path.write_text(text.replace(old, new))


def problems(root: Path) -> list[str]:
    with pytest.raises(KBError) as info:
        load_kb(root)
    return [str(p) for p in info.value.problems]


def test_fixture_is_valid() -> None:
    kb = load_kb(FIXTURE)
    assert [e.id for e in kb.entries] == ["fixture-disk-full", "fixture-quota"]
    entry = kb.get("fixture-disk-full")
    assert entry.match.none == ("edquot",)
    assert entry.examples[0].evidence == ("Errno 28",)


CASES = [
    # (name, old, new, expected message)
    (
        "missing-field",
        "summary: A minimal valid entry the tests mutate one field at a time.\n",
        "",
        "kb/checkpoint/fixture-disk-full.yaml:2:1: (entry): missing required field 'summary'",
    ),
    (
        "wrong-type",
        "severity: high",
        "severity: 5",
        "kb/checkpoint/fixture-disk-full.yaml:8:11: severity: 5 is not one of",
    ),
    (
        "unknown-field-typo",
        "verify:\n  command:",
        "verify:\n  comand: x\n  command:",
        "kb/checkpoint/fixture-disk-full.yaml:29:3: verify.comand: unknown field 'comand' (did you mean 'command'?)",
    ),
    (
        "unknown-signal",
        "all: [enospc]",
        "all: [enospc, bar]",
        "kb/checkpoint/fixture-disk-full.yaml:58:17: match.all[1]: unknown signal 'bar'",
    ),
    (
        "unused-signal",
        "  none: [edquot]\n",
        "",
        "kb/checkpoint/fixture-disk-full.yaml:47:9: signals[1].id: signal 'edquot' is not used by the match rule",
    ),
    (
        "id-file-mismatch",
        "id: fixture-disk-full",
        "id: fixture-disk-fill",
        "kb/checkpoint/fixture-disk-full.yaml:2:5: id: id 'fixture-disk-fill' does not match file name 'fixture-disk-full.yaml'",
    ),
    (
        "phase-folder-mismatch",
        "phase: checkpoint",
        "phase: offload",
        "kb/checkpoint/fixture-disk-full.yaml:6:8: phase: phase 'offload' does not match folder 'checkpoint/'",
    ),
    (
        "bad-regex",
        "pattern: 'No space left on device'",
        "pattern: 'No space left (on device'",
        "kb/checkpoint/fixture-disk-full.yaml:40:14: signals[0].pattern: regex does not compile: missing ), unterminated subpattern",
    ),
    (
        "backreference",
        "pattern: 'No space left on device'",
        "pattern: '(No) space \\1'",
        "kb/checkpoint/fixture-disk-full.yaml:40:14: signals[0].pattern: regex is not RE2-compatible: invalid escape sequence: \\1",
    ),
    (
        "lookahead",
        "pattern: 'No space left on device'",
        "pattern: 'No space(?= left)'",
        "kb/checkpoint/fixture-disk-full.yaml:40:14: signals[0].pattern: regex is not RE2-compatible: invalid perl operator: (?=",
    ),
    (
        "empty-match-regex",
        "pattern: 'No space left on device'",
        "pattern: '(No space)?'",
        "kb/checkpoint/fixture-disk-full.yaml:40:14: signals[0].pattern: regex matches the empty string",
    ),
    (
        "bad-version-specifier",
        'specifier: ">=0.17.1,<0.19.1"',
        'specifier: ">=0.17.1,<<0.19.1"',
        "kb/checkpoint/fixture-disk-full.yaml:18:18: affected.versions[0].specifier: invalid PEP 440 version specifier '>=0.17.1,<<0.19.1'",
    ),
    (
        "unknown-tag",
        "tags: [checkpoint-save, enospc]",
        "tags: [checkpoint-save, enospcc]",
        "kb/checkpoint/fixture-disk-full.yaml:9:25: tags[1]: unknown tag 'enospcc' (did you mean 'enospc'?)",
    ),
    (
        "dangling-look-alike",
        "  - id: fixture-quota\n    tell: errno 122",
        "  - id: fixture-nope\n    tell: errno 122",
        "kb/checkpoint/fixture-disk-full.yaml:32:9: look_alikes[0].id: unknown entry 'fixture-nope'",
    ),
    (
        "duplicate-yaml-key",
        "severity: high\n",
        "severity: high\nseverity: low\n",
        "kb/checkpoint/fixture-disk-full.yaml:9:1: (file): duplicate key 'severity' (first defined at line 8)",
    ),
    (
        "python-tag",
        "severity: high",
        "severity: !!python/object/apply:os.system ['true']",
        "kb/checkpoint/fixture-disk-full.yaml:8:11: (file): unsupported YAML tag 'tag:yaml.org,2002:python/object/apply:os.system'",
    ),
    (
        "missing-log-file",
        "    log: |\n      OSError: [Errno 28] No space left on device\n    evidence",
        "    log_file: captured/nope.log\n    evidence",
        "kb/checkpoint/fixture-disk-full.yaml:65:15: examples[0].log_file: log file 'captured/nope.log' does not exist",
    ),
    (
        "log-and-log-file",
        '    evidence: ["Errno 28"]',
        '    log_file: captured/x.log\n    evidence: ["Errno 28"]',
        "kb/checkpoint/fixture-disk-full.yaml:61:5: examples[0]: give exactly one of 'log' or 'log_file'",
    ),
    (
        "yaml-syntax",
        "title: Fixture entry",
        "title: [Fixture entry",
        "kb/checkpoint/fixture-disk-full.yaml:4:8: (file): YAML syntax error",
    ),
    (
        "signal-without-source",
        "    description: errno 28 text\n    source:\n      kind: upstream-source\n      repo: mkerrisk/man-pages\n      path: man3/errno.3\n      ref: man-pages-6.9\n  - id: edquot",
        "    description: errno 28 text\n  - id: edquot",
        "kb/checkpoint/fixture-disk-full.yaml:39:5: signals[0]: missing required field 'source'",
    ),
    (
        "upstream-source-without-ref",
        "      path: man3/errno.3\n      ref: man-pages-6.9\n  - id: edquot",
        "      path: man3/errno.3\n  - id: edquot",
        "kb/checkpoint/fixture-disk-full.yaml:43:7: signals[0].source: missing required field 'ref'",
    ),
    (
        "none-overlaps-all",
        "none: [edquot]",
        "none: [edquot, enospc]",
        "kb/checkpoint/fixture-disk-full.yaml:59:9: match.none: signal 'enospc' is both required and vetoing",
    ),
]


@pytest.mark.parametrize(("name", "old", "new", "expected"), CASES, ids=[c[0] for c in CASES])
def test_broken_entry_is_located(
    kb_copy: Path, name: str, old: str, new: str, expected: str
) -> None:
    edit(kb_copy, old, new)
    found = problems(kb_copy)
    assert any(p.startswith(expected) for p in found), "\n".join(found)


def test_empty_file(kb_copy: Path) -> None:
    (kb_copy / ENTRY).write_text("")
    found = problems(kb_copy)
    assert "kb/checkpoint/fixture-disk-full.yaml:1:1: (file): file is empty" in found


def test_duplicate_id_across_files(kb_copy: Path) -> None:
    dup = kb_copy / "checkpoint" / "fixture-copy.yaml"
    shutil.copy(kb_copy / ENTRY, dup)
    found = problems(kb_copy)
    assert any(
        p.startswith(
            "kb/checkpoint/fixture-disk-full.yaml:2:5: id: duplicate id 'fixture-disk-full'"
        )
        or p.startswith("kb/checkpoint/fixture-copy.yaml:2:5: id: duplicate id 'fixture-disk-full'")
        for p in found
    ), found


def test_every_problem_is_reported(kb_copy: Path) -> None:
    edit(kb_copy, "severity: high", "severity: hgh")
    edit(kb_copy, "all: [enospc]", "all: [enospc, ghost]")
    edit(kb_copy, "all: [edquot]", "all: [edquot, phantom]", rel="checkpoint/fixture-quota.yaml")
    found = problems(kb_copy)
    # The schema error stops deeper checks of that one file, not of the others.
    assert any("fixture-disk-full.yaml:8:11: severity:" in p for p in found)
    assert any(
        "fixture-quota.yaml:58:17: match.all[1]: unknown signal 'phantom'" in p for p in found
    )
    assert len(found) == 2


def test_bad_tag_vocabulary(kb_copy: Path) -> None:
    (kb_copy / "tags.yaml").write_text("Bad Tag: nope\nenospc: errno 28\n")
    found = problems(kb_copy)
    assert "kb/tags.yaml:1:1: Bad Tag: tag must be lower-case kebab-case" in found


def test_missing_kb_dir(tmp_path: Path) -> None:
    with pytest.raises(KBError) as info:
        load_kb(tmp_path / "nowhere")
    assert "knowledge base folder does not exist" in str(info.value)


def test_entries_are_frozen() -> None:
    entry = load_kb(FIXTURE).get("fixture-quota")
    with pytest.raises(AttributeError):
        entry.id = "other"  # type: ignore[misc]
