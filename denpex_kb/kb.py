"""Load and validate the knowledge base: kb/<phase>/<id>.yaml -> immutable Entry objects.

Validation has two layers: the JSON Schema (shape and vocabulary of one entry) and the checks a
schema cannot express (ids versus file names, references between entries and signals, regexes
that compile in Python and RE2, PEP 440 specifiers, the tag vocabulary). Every problem is
collected and reported as `file:line:col: field.path: message`; nothing stops at the first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from . import model as m
from .yamlsrc import Located, YamlProblem, format_path, load_located

TAGS_FILE = "tags.yaml"
CAPTURED_DIR = "captured"


@dataclass(frozen=True, order=True)
class Problem:
    """One validation finding, located in a file."""

    file: str
    line: int
    column: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.field}: {self.message}"


class KBError(Exception):
    """The knowledge base did not validate; `problems` lists every finding."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


@cache
def entry_schema() -> dict[str, Any]:
    text = resources.files("denpex_kb.schemas").joinpath("entry.schema.json").read_text("utf-8")
    return json.loads(text)


def default_kb_dir() -> Path:
    """The bundled knowledge base (`bundle.py` says where: the checkout's `kb/`, or the copy
    inside an installed wheel)."""
    from .bundle import BundleError
    from .bundle import default_kb_dir as bundled

    try:
        return bundled()
    except BundleError as exc:
        raise KBError([Problem("(bundled kb)", 1, 1, "(kb)", str(exc))]) from None


def _display(path: Path) -> str:
    """Paths in messages are relative to the current directory when possible."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _entry_files(root: Path) -> list[Path]:
    files: list[Path] = []
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        if sub.name == CAPTURED_DIR or sub.name.startswith((".", "_")):
            continue
        files.extend(sorted(sub.glob("*.yaml")))
        files.extend(sorted(sub.glob("*.yml")))
    return files


def _schema_problems(doc: Located, fname: str) -> list[Problem]:
    validator = jsonschema.Draft202012Validator(entry_schema())
    out: list[Problem] = []
    for err in validator.iter_errors(doc.data):
        out.extend(_explain_schema_error(err, doc, fname))
    return out


def _explain_schema_error(
    err: jsonschema.ValidationError, doc: Located, fname: str
) -> list[Problem]:
    path = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = set(err.schema.get("properties", {}))
        extras = sorted(k for k in err.instance if k not in allowed)
        problems = []
        for key in extras:
            line, col = doc.where_key(path + (key,))
            hint = _closest(key, allowed)
            msg = f"unknown field {key!r}" + (f" (did you mean {hint!r}?)" if hint else "")
            problems.append(Problem(fname, line, col, format_path(path + (key,)), msg))
        return problems
    if err.validator == "required":
        missing = re.search(r"'([^']+)' is a required property", err.message)
        name = missing.group(1) if missing else "?"
        line, col = doc.where(path)
        return [Problem(fname, line, col, format_path(path), f"missing required field {name!r}")]
    if err.validator in ("oneOf", "anyOf") and path and path[0] == "examples":
        line, col = doc.where(path)
        return [
            Problem(fname, line, col, format_path(path), "give exactly one of 'log' or 'log_file'")
        ]
    if err.validator == "anyOf" and path == ("match",):
        line, col = doc.where(path)
        return [Problem(fname, line, col, "match", "needs 'all' or 'any' (or both)")]
    line, col = doc.where(path)
    message = err.message
    if len(message) > 200:
        message = message[:197] + "..."
    return [Problem(fname, line, col, format_path(path), message)]


def _closest(word: str, options: Iterable[str]) -> str | None:
    import difflib

    hits = difflib.get_close_matches(word, sorted(options), n=1, cutoff=0.75)
    return hits[0] if hits else None


def compile_re2(pattern: str, ignore_case: bool = False) -> str | None:
    """Return None if RE2 accepts the pattern, else RE2's reason."""
    import re2

    opts = re2.Options()
    opts.log_errors = False
    opts.case_sensitive = not ignore_case
    try:
        re2.compile(pattern, opts)
    except Exception as exc:  # re2.error has no stable public type across versions
        reason = exc.args[0] if exc.args else exc
        return reason.decode() if isinstance(reason, bytes) else str(reason)
    return None


def fact_condition_problems(cond: dict[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """Problems of one `match.facts` condition: unknown fact, unknown field, a bad regex."""
    from .factspec import fact_fields

    fields = fact_fields()
    if cond["fact"] not in fields:
        return [(("fact",), f"unknown fact {cond['fact']!r} (known: {', '.join(sorted(fields))})")]
    out: list[tuple[tuple[str, ...], str]] = []
    for part in ("where", "test"):
        for fname, ops in (cond.get(part) or {}).items():
            if fname not in fields[cond["fact"]]:
                out.append(((part, fname), f"fact {cond['fact']!r} has no field {fname!r}"))
            for op, val in ops.items():
                if op in ("matches", "not_matches") and compile_re2(val):
                    out.append(((part, fname, op), f"not an RE2 pattern: {compile_re2(val)}"))
                if isinstance(val, dict):
                    for f in val.get("sum", []):
                        if f not in fields[cond["fact"]]:
                            out.append(((part, fname, op), f"no field {f!r} to sum"))
    return out


def _spec_problem(spec: str) -> str | None:
    try:
        SpecifierSet(spec)
    except InvalidSpecifier:
        return f"invalid PEP 440 version specifier {spec!r}"
    return None


MAX_FILE_BYTES = 8 << 20  # the largest entry today is under 64 KiB


def read_text_file(path: Path) -> tuple[str, tuple[int, int, str] | None]:
    """(text, None) for a readable UTF-8 regular file, else ("", (line, column, problem)).

    Devices, FIFOs and sockets (an entry symlinked to /dev/zero) are refused without reading,
    as are files over MAX_FILE_BYTES; bytes that are not UTF-8 are located exactly."""
    import stat

    try:
        st = path.stat()
    except OSError as exc:
        return "", (1, 1, f"cannot read: {exc.strerror}")
    if not stat.S_ISREG(st.st_mode):
        return "", (1, 1, "not a regular file (a device, FIFO or socket); refusing to read it")
    if st.st_size > MAX_FILE_BYTES:
        return "", (1, 1, f"file is {st.st_size:,} bytes; an entry is at most {MAX_FILE_BYTES:,}")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return "", (1, 1, f"cannot read: {exc.strerror}")
    if len(data) > MAX_FILE_BYTES:
        return "", (1, 1, f"file is larger than {MAX_FILE_BYTES:,} bytes")
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        col = len(data[line_start : exc.start].decode("utf-8", "replace")) + 1
        bad = data[exc.start : exc.end].hex(" ")
        return "", (line, col, f"not UTF-8 text: {exc.reason} (byte(s) {bad})")


def load_tags(root: Path) -> tuple[dict[str, str], list[Problem]]:
    path = root / TAGS_FILE
    fname = _display(path)
    text, problem = read_text_file(path)
    if problem is not None:
        line, col, msg = problem
        return {}, [Problem(fname, line, col, "(tags)", f"tag vocabulary: {msg}")]
    try:
        doc = load_located(text)
    except YamlProblem as exc:
        return {}, [Problem(fname, exc.line, exc.column, "(tags)", exc.message)]
    if not isinstance(doc.data, dict):
        return {}, [Problem(fname, 1, 1, "(tags)", "must map each tag to its meaning")]
    problems = []
    tags: dict[str, str] = {}
    for key, val in doc.data.items():
        line, col = doc.where_key((key,))
        if not re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", key):
            problems.append(Problem(fname, line, col, key, "tag must be lower-case kebab-case"))
        elif not isinstance(val, str) or not val.strip():
            problems.append(Problem(fname, line, col, key, "tag needs a one-line meaning"))
        else:
            tags[key] = val.strip()
    return tags, problems


# Entry fields that are code or log text: shown verbatim in code blocks, never as Markdown.
_VERBATIM_FIELDS = {
    ("signals", "pattern"),
    ("signals", "source", "quote"),
    ("examples", "log"),
    ("checklist", "command"),
    ("fix", "snippets", "code"),
    ("verify", "command"),
}
_CODE_SPANS = re.compile(r"(`+)(?:.+?)\1", re.S)
_IMAGE = re.compile(r"!\[[^\]]*\]\s*[(\[]")
_EMBED = re.compile(r"<\s*/?\s*(?:img|iframe|frame|object|embed|video|audio|source|link)\b", re.I)
_LINK_TARGET = re.compile(
    r"\]\(\s*<?\s*([a-zA-Z][a-zA-Z0-9+.-]*):|^\s*\[[^\]]+\]:\s*<?\s*([a-zA-Z][a-zA-Z0-9+.-]*):",
    re.M,
)


def hub_text_problems(data: Any, path: tuple[str | int, ...] = ()) -> list[tuple[tuple, str]]:
    """Entry text is rendered into the hub: refuse what would load or run something there
    (images, iframes and other embeds, links that are not http(s) or relative)."""
    out: list[tuple[tuple, str]] = []
    if isinstance(data, dict):
        for k, v in data.items():
            out.extend(hub_text_problems(v, path + (k,)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.extend(hub_text_problems(v, path + (i,)))
    elif isinstance(data, str):
        if tuple(p for p in path if isinstance(p, str)) in _VERBATIM_FIELDS:
            return out
        text = _CODE_SPANS.sub("", data)
        if _IMAGE.search(text):
            out.append((path, "images are not allowed in entry text (the hub loads nothing)"))
        m = _EMBED.search(text)
        if m:
            out.append(
                (path, f"HTML {m.group(0).strip()!r}...> is not allowed in entry text (no embeds)")
            )
        for lm in _LINK_TARGET.finditer(text):
            scheme = (lm.group(1) or lm.group(2)).lower()
            if scheme not in ("http", "https"):
                out.append(
                    (path, f"link target {scheme + ':'!r} not allowed (http(s) or relative)")
                )
    return out


def _check_entry(
    data: dict[str, Any], doc: Located, path: Path, root: Path, tags: dict[str, str] | None
) -> list[Problem]:
    """Checks beyond the schema that concern one entry alone."""
    fname = _display(path)
    out: list[Problem] = []

    def add(p: tuple[str | int, ...], msg: str, key: bool = False) -> None:
        line, col = doc.where_key(p) if key else doc.where(p)
        out.append(Problem(fname, line, col, format_path(p), msg))

    for p, msg in hub_text_problems(data):
        add(p, msg)
    if data["id"] != path.stem:
        add(("id",), f"id {data['id']!r} does not match file name {path.name!r}")
    if data["phase"] != path.parent.name:
        add(("phase",), f"phase {data['phase']!r} does not match folder '{path.parent.name}/'")
    for i, tag in enumerate(data["tags"]):
        if tags is not None and tag not in tags:
            hint = _closest(tag, tags)
            add(
                ("tags", i),
                f"unknown tag {tag!r}"
                + (f" (did you mean {hint!r}?)" if hint else "")
                + f"; add it to kb/{TAGS_FILE} first",
            )

    signal_ids: dict[str, int] = {}
    for i, sig in enumerate(data["signals"]):
        if sig["id"] in signal_ids:
            add(("signals", i, "id"), f"duplicate signal id {sig['id']!r}")
        signal_ids.setdefault(sig["id"], i)
        pat = sig["pattern"]
        flags = re.IGNORECASE if sig.get("ignore_case") else 0
        try:
            re.compile(pat, flags)
        except re.error as exc:
            add(("signals", i, "pattern"), f"regex does not compile: {exc}")
            continue
        reason = compile_re2(pat, bool(sig.get("ignore_case")))
        if reason:
            add(("signals", i, "pattern"), f"regex is not RE2-compatible: {reason}")
        elif re.compile(pat, flags).search(""):
            add(
                ("signals", i, "pattern"),
                "regex matches the empty string, so it matches every line",
            )
        else:
            from .redos import problems as backtracking_problems

            for finding in backtracking_problems(pat, bool(sig.get("ignore_case"))):
                add(
                    ("signals", i, "pattern"),
                    f"regex is super-linear under backtracking ({finding}); the rule pack's "
                    "JavaScript and Python consumers would hang on a hostile line: rewrite it",
                )
        src = sig["source"]
        if (
            src["kind"] == "captured-log"
            and not (root / src["path"]).is_file()
            and not (root.parent / src["path"]).is_file()
        ):
            add(("signals", i, "source", "path"), f"captured log {src['path']!r} does not exist")

    used: set[str] = set()
    rule = data["match"]
    for clause in ("all", "any", "none", "weak"):
        for j, sid in enumerate(rule.get(clause, [])):
            used.add(sid)
            if sid not in signal_ids:
                add(("match", clause, j), f"unknown signal {sid!r}")
    for sid, i in signal_ids.items():
        if sid not in used:
            add(("signals", i, "id"), f"signal {sid!r} is not used by the match rule")
    overlap = set(rule.get("none", [])) & (set(rule.get("all", [])) | set(rule.get("any", [])))
    for sid in sorted(overlap):
        add(("match", "none"), f"signal {sid!r} is both required and vetoing")
    for j, cond in enumerate(rule.get("versions", [])):
        msg = _spec_problem(cond["specifier"])
        if msg:
            add(("match", "versions", j, "specifier"), msg)
    for j, cond in enumerate(rule.get("facts", [])):
        for where, msg in fact_condition_problems(cond):
            add(("match", "facts", j, *where), msg)

    for j, ver in enumerate(data["affected"]["versions"]):
        msg = _spec_problem(ver["specifier"])
        if msg:
            add(("affected", "versions", j, "specifier"), msg)
        if "fixed_in" in ver:
            try:
                Version(ver["fixed_in"])
            except InvalidVersion:
                add(("affected", "versions", j, "fixed_in"), f"invalid version {ver['fixed_in']!r}")

    seen_examples: set[str] = set()
    for j, ex in enumerate(data["examples"]):
        if ex["name"] in seen_examples:
            add(("examples", j, "name"), f"duplicate example name {ex['name']!r}")
        seen_examples.add(ex["name"])
        if "log_file" in ex:
            target = (root / ex["log_file"]).resolve()
            if root.resolve() not in target.parents:
                add(("examples", j, "log_file"), "log_file must stay inside the knowledge base")
            elif not target.is_file():
                add(("examples", j, "log_file"), f"log file {ex['log_file']!r} does not exist")
        if ex.get("evidence") and ex["expect"] != "match":
            add(("examples", j, "evidence"), "evidence only makes sense with expect: match")
    if not any(ex["expect"] == "match" for ex in data["examples"]):
        add(("examples",), "needs at least one example with expect: match")
    return out


def _build_entry(data: dict[str, Any], rel: str, root: Path) -> m.Entry:
    def tup(items: Iterable[Any]) -> tuple[Any, ...]:
        return tuple(items)

    sigs = tup(
        m.Signal(
            id=s["id"],
            pattern=s["pattern"],
            description=s["description"],
            source=m.SignalSource(**s["source"]),
            ignore_case=bool(s.get("ignore_case", False)),
        )
        for s in data["signals"]
    )
    rule = data["match"]
    examples = []
    for ex in data["examples"]:
        log = ex.get("log")
        if log is None:
            log = (root / ex["log_file"]).read_text("utf-8", errors="replace")
        examples.append(
            m.Example(
                name=ex["name"],
                expect=ex["expect"],
                provenance=ex["provenance"],
                log=log,
                log_file=ex.get("log_file"),
                source=ex.get("source"),
                description=ex.get("description"),
                expect_top=ex.get("expect_top"),
                evidence=tup(ex.get("evidence", [])),
            )
        )
    fix = data["fix"]
    aff = data["affected"]
    return m.Entry(
        id=data["id"],
        title=data["title"],
        summary=data["summary"],
        framework=data["framework"],
        phase=data["phase"],
        failure_class=data["failure_class"],
        severity=data["severity"],
        tags=tup(data["tags"]),
        mechanism=data["mechanism"],
        symptoms=tup(data["symptoms"]),
        affected=m.Affected(
            configs=tup(aff["configs"]),
            versions=tup(m.AffectedVersion(**v) for v in aff["versions"]),
        ),
        checklist=tup(m.ChecklistItem(**c) for c in data["checklist"]),
        fix=m.Fix(
            steps=tup(fix["steps"]),
            snippets=tup(m.Snippet(**s) for s in fix.get("snippets", [])),
            workaround=fix.get("workaround"),
        ),
        verify=m.Verify(**data["verify"]),
        look_alikes=tup(m.LookAlike(**la) for la in data["look_alikes"]),
        references=tup(m.Reference(**r) for r in data["references"]),
        signals=sigs,
        match=m.MatchRule(
            role=rule["role"],
            scope=rule["scope"],
            all=tup(rule.get("all", [])),
            any=tup(rule.get("any", [])),
            none=tup(rule.get("none", [])),
            versions=tup(m.VersionCondition(**v) for v in rule.get("versions", [])),
            window_lines=rule.get("window_lines"),
            fatal=bool(rule.get("fatal", True)),
            weak=tup(rule.get("weak", [])),
            facts=tup(rule.get("facts", [])),
            explains=tup(rule.get("explains", [])),
        ),
        examples=tup(examples),
        not_the_cause=tup(m.NotTheCause(**n) for n in data.get("not_the_cause", [])),
        source_path=rel,
    )


KBDirs = str | Path | Iterable[str | Path] | None


def kb_roots(root: KBDirs = None) -> list[Path]:
    """The folders of a knowledge base given as one folder, several (layered in order) or None
    (the bundled one)."""
    if root is None:
        return [default_kb_dir()]
    if isinstance(root, str | Path):
        return [Path(root)]
    roots = [Path(r) for r in root]
    return roots or [default_kb_dir()]


def _layer_tags(roots: list[Path]) -> tuple[dict[str, str], list[Problem], bool]:
    """The tag vocabulary of every layer together. A layer after the first may have no
    tags.yaml (it uses the vocabulary below it); one that redefines a tag must agree."""
    tags: dict[str, str] = {}
    problems: list[Problem] = []
    known = True
    for i, root in enumerate(roots):
        if i and not (root / TAGS_FILE).exists():
            continue
        layer, found = load_tags(root)
        problems.extend(found)
        known = known and (bool(layer) or not found)
        for key, meaning in layer.items():
            if key in tags and tags[key] != meaning:
                problems.append(
                    Problem(
                        _display(root / TAGS_FILE),
                        1,
                        1,
                        key,
                        f"tag {key!r} already has another meaning in a layer below",
                    )
                )
            tags.setdefault(key, meaning)
    return tags, problems, known


def load_kb(root: KBDirs = None) -> m.KnowledgeBase:
    """Load and fully validate a knowledge base. Raises KBError listing every problem.

    `root`: a folder, or several folders layered in order (e.g. the bundled one, then a team's
    private entries): one knowledge base whose ids must be unique across all of them. None:
    the bundled knowledge base."""
    roots = kb_roots(root)
    missing = [r for r in roots if not r.is_dir()]
    if missing:
        raise KBError(
            [
                Problem(_display(r), 1, 1, "(kb)", "knowledge base folder does not exist")
                for r in missing
            ]
        )
    tags, problems, tags_known = _layer_tags(roots)
    # An unreadable tag vocabulary is one problem; entries are then not checked against it.
    parsed: list[tuple[Path, Located]] = []
    layer_of: dict[Path, Path] = {}
    known_ids: set[str] = set()  # ids of every readable entry, so one bad entry does not cascade
    files = []
    for layer in roots:
        for path in _entry_files(layer):
            layer_of[path] = layer
            files.append(path)
    for path in files:
        root = layer_of[path]
        fname = _display(path)
        if path.suffix == ".yml":
            problems.append(Problem(fname, 1, 1, "(file)", "entries use the .yaml extension"))
            continue
        # Its id is known even when the file is unreadable: entries that refer to it must not
        # report it as unknown (one broken file is one problem, not ten).
        known_ids.add(path.stem)
        text, problem = read_text_file(path)
        if problem is not None:
            line, col, msg = problem
            problems.append(Problem(fname, line, col, "(file)", msg))
            continue
        try:
            doc = load_located(text)
        except YamlProblem as exc:
            problems.append(Problem(fname, exc.line, exc.column, "(file)", exc.message))
            continue
        if not isinstance(doc.data, dict):
            problems.append(Problem(fname, 1, 1, "(entry)", "an entry must be a YAML mapping"))
            continue
        if isinstance(doc.data.get("id"), str):
            known_ids.add(doc.data["id"])
        schema_problems = _schema_problems(doc, fname)
        problems.extend(schema_problems)
        if not schema_problems:
            problems.extend(_check_entry(doc.data, doc, path, root, tags if tags_known else None))
            parsed.append((path, doc))

    # Checks across entries.
    ids: dict[str, Path] = {}
    for path, doc in parsed:
        eid = doc.data["id"]
        if eid in ids:
            line, col = doc.where(("id",))
            problems.append(
                Problem(
                    _display(path),
                    line,
                    col,
                    "id",
                    f"duplicate id {eid!r} (also in {_display(ids[eid])})",
                )
            )
        else:
            ids[eid] = path
    for path, doc in parsed:
        fname = _display(path)
        for i, la in enumerate(doc.data["look_alikes"]):
            if la["id"] == doc.data["id"]:
                line, col = doc.where(("look_alikes", i, "id"))
                problems.append(
                    Problem(
                        fname,
                        line,
                        col,
                        f"look_alikes[{i}].id",
                        "an entry cannot be its own look-alike",
                    )
                )
            elif la["id"] not in known_ids:
                line, col = doc.where(("look_alikes", i, "id"))
                problems.append(
                    Problem(fname, line, col, f"look_alikes[{i}].id", f"unknown entry {la['id']!r}")
                )
        for j, ex in enumerate(doc.data["match"].get("explains", [])):
            if ex["id"] not in known_ids or ex["id"] == doc.data["id"]:
                line, col = doc.where(("match", "explains", j, "id"))
                msg = f"unknown entry {ex['id']!r}" if ex["id"] != doc.data["id"] else "self"
                problems.append(Problem(fname, line, col, f"match.explains[{j}].id", msg))
        for j, ex in enumerate(doc.data["examples"]):
            top = ex.get("expect_top")
            if top and top not in known_ids:
                line, col = doc.where(("examples", j, "expect_top"))
                problems.append(
                    Problem(fname, line, col, f"examples[{j}].expect_top", f"unknown entry {top!r}")
                )
    if not parsed and not problems:
        problems.append(
            Problem(_display(roots[0]), 1, 1, "(kb)", "no entries found under <phase>/ folders")
        )
    if problems:
        raise KBError(problems)
    # Source paths are relative to the folder above the first layer (`kb/<phase>/<id>.yaml`);
    # an entry of another layer elsewhere keeps its full path.
    base = roots[0].resolve().parent
    entries = []
    for path, doc in parsed:
        try:
            rel = str(path.resolve().relative_to(base))
        except ValueError:
            rel = str(path.resolve())
        entries.append(_build_entry(doc.data, rel, layer_of[path]))
    entries.sort(key=lambda e: (m.PHASES.index(e.phase), e.id))
    layers = tuple(str(r) for r in roots) if len(roots) > 1 else ()
    return m.KnowledgeBase(root=str(roots[0]), entries=tuple(entries), tags=tags, layers=layers)
