"""Perturbed error lines for evaluating the text index (used by its test and its benchmark).

For each entry, each positive signal's matching lines in the entry's own examples are varied the
way two real instances of one failure differ: other numbers, other paths, other addresses.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .model import KnowledgeBase

_TOKEN = re.compile(r"0x[0-9a-fA-F]+|(?<![A-Za-z_])\d+")
_DIR = re.compile(r"(?:/[\w.+@<>-]+)+/")


@dataclass(frozen=True)
class Probe:
    entry_id: str
    signal_id: str
    line: str
    variant: str
    also_matching: frozenset[str]
    """Other entries whose own positive signals match the variant: text alone cannot rank the
    target above them, so the target only has to be within the first len(also_matching)+1."""


def vary(line: str, keep_matching: re.Pattern[str] | None = None) -> str:
    """Change what differs between two instances of a failure (counts, sizes, ranks, PIDs,
    paths, addresses); keep what identifies it: errno, Xid and exit-code numbers, and any
    number the signal `keep_matching` needs to still match (e.g. the 0 of `torch.Size([0])`)."""
    from .errortext import _KEEP_NUMBER_AFTER

    def still_ok(candidate: str) -> bool:
        return keep_matching is None or bool(keep_matching.search(candidate))

    varied = _DIR.sub("/scratch/other/run-q/", line)
    if not still_ok(varied):
        varied = line
    keep = [m.span(2) for m in _KEEP_NUMBER_AFTER.finditer(varied)]
    # Replace token by token, right to left so earlier offsets stay valid.
    for m in reversed(list(_TOKEN.finditer(varied))):
        text = m.group(0)
        if text.startswith("0x"):
            new = "0x7ffd1234abcd"
        elif any(a <= m.start() < b for a, b in keep):
            continue
        else:
            new = str(int(text) + 7).zfill(len(text))
        candidate = varied[: m.start()] + new + varied[m.end() :]
        if still_ok(candidate):
            varied = candidate
    return varied


def probes(kb: KnowledgeBase) -> Iterator[Probe]:
    compiled = {
        e.id: [
            (s.id, re.compile(s.pattern, re.IGNORECASE if s.ignore_case else 0))
            for s in e.signals
            if s.id in e.match.all or s.id in e.match.any
        ]
        for e in kb.entries
    }
    for entry in kb.entries:
        seen: set[str] = set()
        for ex in entry.examples:
            if ex.expect != "match":
                continue
            for line in ex.log.splitlines():
                for sid, rx in compiled[entry.id]:
                    if line in seen or not rx.search(line):
                        continue
                    seen.add(line)
                    variant = vary(line.strip(), rx)
                    others = frozenset(
                        other
                        for other, sigs in compiled.items()
                        if other != entry.id
                        and any(r.search(variant) or r.search(line) for _, r in sigs)
                    )
                    yield Probe(entry.id, sid, line.strip(), variant, others)
