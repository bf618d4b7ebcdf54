"""The labelled corpus (tests/corpus/): one case per `.log` file, a `#corpus key: value` header
block, then the verbatim log (the body, which is all the engine sees).

    cases = load_cases([Path("tests/corpus")])   # raises CorpusError listing every problem

The format is described in tests/corpus/README.md.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from .model import PHASES

HEADER_PREFIX = b"#corpus"
SPLITS: tuple[str, ...] = ("dev", "holdout")
CASE_PHASES: tuple[str, ...] = (*PHASES, "healthy")
REQUIRED_KEYS: tuple[str, ...] = ("url", "expect", "covered", "phase", "evidence", "split")
OPTIONAL_KEYS: tuple[str, ...] = ("rank", "note")
NONE = "none"

_LINE = re.compile(r"#corpus ([a-z]+): (.*)")
_KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_URL = re.compile(r"https?://\S+")


class CorpusError(Exception):
    """One or more corpus files are malformed; `problems` holds one `FILE:LINE: message` each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems[0] if len(problems) == 1 else f"{len(problems)} problems")
        self.problems = problems


@dataclass(frozen=True)
class Case:
    id: str
    path: Path
    url: str
    expect: str
    covered: bool
    phase: str
    evidence: str
    split: str
    rank: int | None
    note: str | None
    body: bytes
    """The log after the header, byte for byte."""

    @property
    def expects_failure(self) -> bool:
        return self.expect != NONE


def split_of(url: str) -> str:
    """The split a thread's URL belongs to (decided by its hash, never by results)."""
    return "holdout" if int(hashlib.sha256(url.encode()).hexdigest()[0], 16) % 2 else "dev"


def _split_header(data: bytes) -> tuple[list[bytes], bytes]:
    """The header lines (without line ends) and the body after them."""
    lines: list[bytes] = []
    pos = 0
    while data.startswith(HEADER_PREFIX, pos):
        end = data.find(b"\n", pos)
        end = len(data) if end == -1 else end
        lines.append(data[pos:end].rstrip(b"\r"))
        pos = end + 1
    return lines, data[pos:]


def _check_value(key: str, value: str) -> str | None:
    """Why `value` is not valid for `key`, or None."""
    if not value:
        return f"{key}: empty value"
    if key == "url" and not _URL.fullmatch(value):
        return f"url: {value!r} is not an http(s) URL"
    if key == "expect" and not _KEBAB.fullmatch(value):
        return f"expect: {value!r} is not a kebab-case entry id or 'none'"
    if key == "covered" and value not in ("yes", "no"):
        return f"covered: {value!r} is not 'yes' or 'no'"
    if key == "phase" and value not in CASE_PHASES:
        return f"phase: {value!r} is not one of: {' '.join(CASE_PHASES)}"
    if key == "split" and value not in SPLITS:
        return f"split: {value!r} is not 'dev' or 'holdout'"
    if key == "rank" and not value.isdigit():
        return f"rank: {value!r} is not a non-negative integer"
    return None


def _parse_header(name: str, lines: list[bytes]) -> tuple[dict[str, str], set[str], list[str]]:
    """The valid fields, every key given (valid or not) and the problems, one per line."""
    fields: dict[str, str] = {}
    given: set[str] = set()
    problems: list[str] = []
    for no, raw in enumerate(lines, 1):
        m = _LINE.fullmatch(raw.decode("utf-8", "replace"))
        if m is None:
            problems.append(f"{name}:{no}: malformed header line; expected '#corpus KEY: VALUE'")
            continue
        key, value = m.group(1), m.group(2).strip()
        why = None
        if key not in REQUIRED_KEYS + OPTIONAL_KEYS:
            why = f"unknown key {key!r}; keys: {' '.join(REQUIRED_KEYS + OPTIONAL_KEYS)}"
        elif key in given:
            why = f"{key}: given twice"
        else:
            why = _check_value(key, value)
        given.add(key)
        if why:
            problems.append(f"{name}:{no}: {why}")
        else:
            fields[key] = value
    return fields, given, problems


def _check_case(
    name: str, path: Path, fields: dict[str, str], given: set[str], n_header: int
) -> list[str]:
    """Problems that involve more than one line: missing keys, split rules, the file name."""
    problems: list[str] = []
    at = f"{name}:{max(n_header, 1)}"
    for key in REQUIRED_KEYS:
        if key not in given:
            problems.append(f"{at}: missing key {key!r}")
    if not _KEBAB.fullmatch(path.stem):
        problems.append(f"{name}:1: case id {path.stem!r} (the file name) is not kebab-case")
    split, url = fields.get("split"), fields.get("url")
    if split and url and split != split_of(url):
        problems.append(f"{at}: split: {split!r}, but the url hashes to {split_of(url)!r}")
    if split and path.parent.name in SPLITS and path.parent.name != split:
        problems.append(f"{at}: split: {split!r}, but the file is in {path.parent.name}/")
    return problems


def _late_header_line(body: bytes) -> int | None:
    """The line number within the body of a `#corpus ` line there, if there is one."""
    at = body.find(b"\n" + HEADER_PREFIX + b" ")
    return None if at == -1 else body.count(b"\n", 0, at) + 2


def parse_case(path: Path, data: bytes | None = None) -> Case:
    """One case file; raises CorpusError naming FILE:LINE for every problem in it."""
    name = str(path)
    if data is None:
        data = path.read_bytes()
    lines, body = _split_header(data)
    if not lines:
        raise CorpusError([f"{name}:1: no '#corpus' header (not a corpus case)"])
    fields, given, problems = _parse_header(name, lines)
    problems += _check_case(name, path, fields, given, len(lines))
    late = _late_header_line(body)
    if late is not None:
        no = len(lines) + late
        problems.append(f"{name}:{no}: a '#corpus' line after the log began; keep the header first")
    if problems:
        raise CorpusError(problems)
    return Case(
        id=path.stem,
        path=path,
        url=fields["url"],
        expect=fields["expect"],
        covered=fields["covered"] == "yes",
        phase=fields["phase"],
        evidence=fields["evidence"],
        split=fields["split"],
        rank=int(fields["rank"]) if "rank" in fields else None,
        note=fields.get("note"),
        body=body,
    )


def case_files(dirs: list[Path]) -> list[Path]:
    """Every `.log` file under the folders (recursively), in a stable order."""
    files: set[Path] = set()
    for d in dirs:
        if not d.is_dir():
            raise CorpusError([f"{d}: not a folder"])
        files.update(p for p in d.rglob("*.log") if p.is_file())
    return sorted(files)


def load_cases(dirs: list[Path]) -> list[Case]:
    """Every case under the folders; raises CorpusError with all problems of all files."""
    cases: list[Case] = []
    problems: list[str] = []
    for path in case_files(dirs):
        try:
            cases.append(parse_case(path))
        except CorpusError as exc:
            problems += exc.problems
        except OSError as exc:
            problems.append(f"{path}: cannot read: {exc.strerror}")
    seen: dict[str, Path] = {}
    for c in cases:
        if c.id in seen:
            problems.append(f"{c.path}:1: case id {c.id!r} also used by {seen[c.id]}")
        seen.setdefault(c.id, c.path)
    if problems:
        raise CorpusError(problems)
    return cases
