"""The Python API: load the knowledge base, diagnose logs, search entries by error text.

This is the stable surface (docs/api.md says what may change in a minor release); everything
else in the package is internal. Results are frozen dataclasses. Imports here stay light
(the standard library and the model): the engine, the loader and the index are imported by
the functions that need them, so `import denpex_kb` is quick.

    import denpex_kb

    d = denpex_kb.match("logs/")            # files, folders of per-rank logs, .gz/.bz2/.xz
    if d.verdict == "confident":
        print(d.root_cause.id, d.initiating_rank, d.root_cause.fix_steps)
    for hit in denpex_kb.search("ncclSystemError: System call (e.g. socket, malloc)"):
        print(hit.id, hit.score)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model import Entry, KnowledgeBase

__all__ = [
    "BUNDLED",
    "Candidate",
    "Collateral",
    "Diagnosis",
    "Entry",
    "Evidence",
    "KnowledgeBase",
    "Matcher",
    "Related",
    "SearchHit",
    "load_kb",
    "match",
    "match_text",
    "search",
]

BUNDLED = "bundled"
"""Names the bundled knowledge base among several folders: `load_kb(BUNDLED, "team-kb/")`."""

PathLike = str | os.PathLike[str]
KBSpec = PathLike | Sequence[PathLike] | None


def _kb_arg(kb: KBSpec) -> Path | list[Path] | None:
    """None (bundled), one folder, or folders layered in order (BUNDLED resolved)."""
    if kb is None:
        return None
    items: list[PathLike] = [kb] if isinstance(kb, str | os.PathLike) else list(kb)
    if not items:
        return None
    roots: list[Path] = []
    for item in items:
        if item == BUNDLED:
            from .kb import default_kb_dir

            roots.append(default_kb_dir())
        else:
            roots.append(Path(item))
    return roots[0] if len(roots) == 1 else roots


# --- results ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """One log line that proves a finding."""

    file: str
    line: int
    rank: int | None
    host: str | None
    text: str


@dataclass(frozen=True)
class Candidate:
    """An entry the log matched (or, with `hypothesis`, partly matched)."""

    id: str
    title: str
    role: str  # "root-cause" or "collateral"
    phase: str
    severity: str
    summary: str
    confidence: float
    url: str  # the entry's page, relative to the docs hub's root
    fix_steps: tuple[str, ...]
    workaround: str | None
    verify_command: str
    verify_expected: str
    ranks: tuple[int, ...]
    evidence: tuple[Evidence, ...]
    hypothesis: bool
    caused_by: str | None

    @classmethod
    def _from(cls, c: dict[str, Any]) -> Candidate:
        fix = c.get("fix") or {}
        verify = c.get("verify") or {}
        return cls(
            id=c["id"],
            title=c["title"],
            role=c["role"],
            phase=c.get("phase", ""),
            severity=c.get("severity", ""),
            summary=c.get("summary", ""),
            confidence=float(c.get("confidence", 0.0)),
            url=c.get("url", ""),
            fix_steps=tuple(fix.get("steps") or ()),
            workaround=fix.get("workaround"),
            verify_command=verify.get("command", ""),
            verify_expected=verify.get("expected", ""),
            ranks=tuple(r for r in c.get("ranks") or () if isinstance(r, int)),
            evidence=tuple(
                Evidence(
                    file=e.get("file", ""),
                    line=int(e.get("line", 0)),
                    rank=e.get("rank"),
                    host=e.get("host"),
                    text=e.get("text", ""),
                )
                for e in c.get("evidence") or ()
            ),
            hypothesis=bool(c.get("hypothesis", False)),
            caused_by=c.get("caused_by"),
        )


@dataclass(frozen=True)
class Collateral:
    """Errors that are consequences, not causes (watchdog timeouts, launcher kills)."""

    id: str
    title: str
    ranks: tuple[int, ...]
    count: int


@dataclass(frozen=True)
class Related:
    """An entry whose text is close to an error no rule recognised: a hint (confidence <= 0.3)."""

    id: str
    title: str
    confidence: float
    why: str


@dataclass(frozen=True)
class Diagnosis:
    """What `match` found. `report` is the full JSON report (docs/report-format.md) for
    anything the typed fields leave out."""

    verdict: str  # "confident", "differential", "probable" or "none"
    root_cause: Candidate | None  # set when the verdict is confident
    hypotheses: tuple[Candidate, ...]  # the differential, or the one probable cause
    candidates: tuple[Candidate, ...]  # every entry that fired, ranked
    initiating_rank: int | None
    initiating_host: str | None
    initiating_basis: str | None
    collateral: tuple[Collateral, ...]
    related: tuple[Related, ...]
    notes: tuple[str, ...]
    report: dict[str, Any] = field(repr=False, compare=False, hash=False)

    @property
    def confident(self) -> bool:
        return self.verdict == "confident"

    @classmethod
    def _from(cls, r: dict[str, Any]) -> Diagnosis:
        rc = r.get("root_cause")
        return cls(
            verdict=r["verdict"],
            root_cause=Candidate._from(rc) if rc else None,
            hypotheses=tuple(
                Candidate._from(c) for c in (r.get("differential") or r.get("probable") or ())
            ),
            candidates=tuple(Candidate._from(c) for c in r.get("candidates") or ()),
            initiating_rank=r.get("initiating_rank"),
            initiating_host=r.get("initiating_host"),
            initiating_basis=r.get("initiating_basis"),
            collateral=tuple(
                Collateral(
                    id=c["id"],
                    title=c.get("title", ""),
                    ranks=tuple(x for x in c.get("ranks") or () if isinstance(x, int)),
                    count=int(c.get("count", 0)),
                )
                for c in r.get("collateral") or ()
            ),
            related=tuple(
                Related(
                    id=x["id"],
                    title=x.get("title", ""),
                    confidence=float(x.get("confidence", 0.0)),
                    why=x.get("why", ""),
                )
                for x in r.get("related") or ()
            ),
            notes=tuple(r.get("notes") or ()),
            report=r,
        )


@dataclass(frozen=True)
class SearchHit:
    """An entry close to the searched text, with the stored line that matched best."""

    id: str
    title: str
    phase: str
    summary: str
    score: float
    snippet: str
    matched_terms: tuple[str, ...]


# --- functions ----------------------------------------------------------------------------------


def load_kb(*dirs: PathLike) -> KnowledgeBase:
    """The knowledge base, fully validated: the bundled one (no argument), one folder, or
    several layered in order (`load_kb(BUNDLED, "team-kb/")`; ids unique across them).

    Raises `denpex_kb.KBError` listing every problem (`.problems`, each FILE:LINE:COL)."""
    from .kb import load_kb as _load

    return _load(_kb_arg(list(dirs)))


class Matcher:
    """A loaded rule pack, ready to diagnose many logs (build it once, call `match` often).

    `rules`: an exported rule pack file (validated against its schema); else the pack of `kb`
    (None: the bundled knowledge base, prebuilt in a wheel; folders: built once and cached per
    user). `related`: for logs no rule recognises, suggest entries from the text index."""

    def __init__(
        self, *, kb: KBSpec = None, rules: PathLike | None = None, related: bool = True
    ) -> None:
        from .engine import Engine, load_rulepack

        self._kb = _kb_arg(kb)
        self._pack = load_rulepack(rules, self._kb)
        self._engine = Engine(self._pack)
        self._related = related

    @property
    def rulepack_hash(self) -> str:
        return str(self._pack["content_hash"])

    def match(self, *paths: PathLike) -> Diagnosis:
        """Diagnose log files and folders (walked; per-rank logs; gzip, bzip2, xz; zstd with
        the `zstd` extra). Raises `denpex_kb.InputError` for a path that cannot be read."""
        from .engine import collect_sources

        if not paths:
            raise TypeError("match() needs at least one path (use match_text for text)")
        report = self._engine.analyse(collect_sources([os.fspath(p) for p in paths]))
        return self._finish(report)

    def match_text(self, text: str | bytes, name: str = "<text>") -> Diagnosis:
        """Diagnose log text held in memory (a pasted traceback, a captured stream)."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        return self._finish(self._engine.analyse_bytes(data, name))

    def _finish(self, report: dict[str, Any]) -> Diagnosis:
        if self._related:
            from .engine import suggest_related
            from .index import IndexError_

            try:
                suggest_related(report, self._kb, pack=self._pack)  # type: ignore[arg-type]
            except (OSError, IndexError_):
                report["related"] = []
        return Diagnosis._from(report)


def match(*paths: PathLike, kb: KBSpec = None, rules: PathLike | None = None) -> Diagnosis:
    """Diagnose log files and folders with the bundled knowledge base (or `kb` / `rules`).
    For many logs, build one `Matcher` and reuse it."""
    return Matcher(kb=kb, rules=rules).match(*paths)


def match_text(text: str | bytes, *, kb: KBSpec = None, rules: PathLike | None = None) -> Diagnosis:
    """Diagnose log text held in memory."""
    return Matcher(kb=kb, rules=rules).match_text(text)


def search(
    text: str, *, limit: int = 5, kb: KBSpec = None, index: PathLike | None = None
) -> list[SearchHit]:
    """Entries closest to any error text (a line, a traceback, a whole log), best first.

    `index`: a built index folder (`denpex-kb build` writes one); else the bundled
    knowledge base's (prebuilt in a wheel) or `kb`'s, built once into the per-user cache."""
    from .index import TextIndex, cached_index

    if limit < 1:
        raise ValueError("limit must be at least 1")
    ix = TextIndex(index) if index is not None else cached_index(_kb_arg(kb))
    try:
        hits = ix.search(text, limit=limit)
    finally:
        ix.close()
    return [
        SearchHit(
            id=h.id,
            title=h.title,
            phase=h.phase,
            summary=h.summary,
            score=h.score,
            snippet=h.snippet,
            matched_terms=tuple(h.matched_terms),
        )
        for h in hits
    ]
