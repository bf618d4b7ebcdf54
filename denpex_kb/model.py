"""Immutable model of a knowledge-base entry, built only by `denpex_kb.kb` after validation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

PHASES: tuple[str, ...] = (
    "build",
    "launch",
    "config",
    "init",
    "zero",
    "memory",
    "numerics",
    "communication",
    "checkpoint",
    "pipeline",
    "offload",
    "data",
    "hardware",
)

PHASE_TITLES: dict[str, str] = {
    "build": "Install and op builds",
    "launch": "Launch",
    "config": "Configuration",
    "init": "Initialisation",
    "zero": "ZeRO",
    "memory": "Memory",
    "numerics": "Numerics",
    "communication": "Communication",
    "checkpoint": "Checkpoints",
    "pipeline": "Pipeline parallelism",
    "offload": "Offload",
    "data": "Data loading",
    "hardware": "Hardware",
}

FAILURE_CLASSES: tuple[str, ...] = (
    "crash",
    "hang",
    "data-integrity",
    "resource-exhaustion",
    "numerical",
    "configuration",
    "performance",
)

Role = Literal["root-cause", "collateral"]


@dataclass(frozen=True)
class SignalSource:
    kind: str
    repo: str | None = None
    path: str | None = None
    ref: str | None = None
    url: str | None = None
    quote: str | None = None


@dataclass(frozen=True)
class Signal:
    id: str
    pattern: str
    description: str
    source: SignalSource
    ignore_case: bool = False


@dataclass(frozen=True)
class VersionCondition:
    package: str
    specifier: str


@dataclass(frozen=True)
class MatchRule:
    role: Role
    scope: Literal["rank", "log"]
    all: tuple[str, ...] = ()
    any: tuple[str, ...] = ()
    none: tuple[str, ...] = ()
    versions: tuple[VersionCondition, ...] = ()
    window_lines: int | None = None
    fatal: bool = True
    weak: tuple[str, ...] = ()  # signals that make the entry a hypothesis, never a diagnosis
    facts: tuple[dict[str, Any], ...] = ()  # conditions over facts (docs/rule-pack-format.md)
    explains: tuple[dict[str, str], ...] = ()  # entries whose messages this failure causes


@dataclass(frozen=True)
class Example:
    name: str
    expect: Literal["match", "no-match"]
    provenance: Literal["captured", "composed", "public"]
    log: str
    log_file: str | None = None
    source: str | None = None
    description: str | None = None
    expect_top: str | None = None
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class LookAlike:
    id: str
    tell: str


@dataclass(frozen=True)
class Reference:
    url: str
    title: str
    kind: str
    note: str | None = None


@dataclass(frozen=True)
class ChecklistItem:
    check: str
    command: str
    shows: str
    read_only: bool = False  # only reads state: may be offered to run (`match --check --run`)


@dataclass(frozen=True)
class Snippet:
    title: str
    language: str
    code: str


@dataclass(frozen=True)
class Fix:
    steps: tuple[str, ...]
    snippets: tuple[Snippet, ...] = ()
    workaround: str | None = None


@dataclass(frozen=True)
class Verify:
    command: str
    expected: str


@dataclass(frozen=True)
class AffectedVersion:
    package: str
    specifier: str
    source: str
    fixed_in: str | None = None


@dataclass(frozen=True)
class Affected:
    configs: tuple[str, ...]
    versions: tuple[AffectedVersion, ...] = ()


@dataclass(frozen=True)
class NotTheCause:
    claim: str
    why: str


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    summary: str
    framework: str
    phase: str
    failure_class: str
    severity: str
    tags: tuple[str, ...]
    mechanism: str
    symptoms: tuple[str, ...]
    affected: Affected
    checklist: tuple[ChecklistItem, ...]
    fix: Fix
    verify: Verify
    look_alikes: tuple[LookAlike, ...]
    references: tuple[Reference, ...]
    signals: tuple[Signal, ...]
    match: MatchRule
    examples: tuple[Example, ...]
    not_the_cause: tuple[NotTheCause, ...] = ()
    source_path: str = field(default="", compare=False)
    """Path of the YAML file relative to the knowledge base's parent (e.g. kb/zero/x.yaml)."""

    @property
    def role(self) -> Role:
        return self.match.role

    def signal(self, signal_id: str) -> Signal:
        for s in self.signals:
            if s.id == signal_id:
                return s
        raise KeyError(signal_id)


@dataclass(frozen=True)
class KnowledgeBase:
    root: str  # the first (or only) folder
    entries: tuple[Entry, ...]
    tags: dict[str, str]
    layers: tuple[str, ...] = ()  # every folder, in order, when several were layered

    def get(self, entry_id: str) -> Entry:
        for e in self.entries:
            if e.id == entry_id:
                return e
        raise KeyError(entry_id)

    def by_phase(self, phase: str) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.phase == phase)
