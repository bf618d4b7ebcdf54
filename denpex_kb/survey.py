"""The frequency survey (`kb/survey/`): how often each failure reaches DeepSpeed users, and how
much of that the knowledge base covers.

Survey files (`threads-*.tsv`) record what a reader saw in each public thread, with the cause
named in the reader's words at the time. `causes.tsv` maps those words onto what the knowledge
base has now (an entry id, or a class that is not a failure), so the observations never have to
be rewritten when an entry is added or renamed. `python -m denpex_kb.survey [kb/survey]` prints
the headline figures that `kb/COVERAGE.md` quotes.
"""

from __future__ import annotations

import csv
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

COLUMNS = ("url", "project", "title", "cause", "entry", "established_by")
ESTABLISHED = frozenset({"maintainer", "fix-pr", "reporter"})
UNKNOWN = "unknown"
# Classes a cause may map to instead of an entry id.
NOT_A_FAILURE = "not-a-failure"  # usage questions, feature requests, healthy output
OUT_OF_SCOPE = "out-of-scope"  # a failure, but not one a DeepSpeed KB should name
UNSPECIFIC = "unspecific"  # the thread names no cause precise enough for an entry
CLASSES = frozenset({NOT_A_FAILURE, OUT_OF_SCOPE, UNSPECIFIC})


class SurveyError(ValueError):
    """A survey file that does not follow the format (message: FILE:LINE: what)."""


@dataclass(frozen=True)
class Thread:
    url: str
    project: str
    cause: str
    entry: str  # as recorded at the time ("-" for none)
    established_by: str
    source: str  # FILE:LINE


@dataclass(frozen=True)
class Classified:
    thread: Thread
    target: str  # an entry id, one of CLASSES, or "" when the cause has no entry


def read_threads(folder: Path) -> list[Thread]:
    """Every row of every `threads-*.tsv` in `folder`, one per URL (the first file in name
    order wins: a thread counted twice would double its weight)."""
    seen: set[str] = set()
    rows: list[Thread] = []
    for path in sorted(folder.glob("threads-*.tsv")):
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(reader, None)
            if tuple(header or ()) != COLUMNS:
                raise SurveyError(f"{path}:1: header must be {' '.join(COLUMNS)}")
            for lineno, cells in enumerate(reader, start=2):
                if not cells:
                    continue
                if len(cells) != len(COLUMNS):
                    raise SurveyError(f"{path}:{lineno}: {len(cells)} columns, want {len(COLUMNS)}")
                row = dict(zip(COLUMNS, cells, strict=True))
                if row["url"] in seen:
                    continue
                seen.add(row["url"])
                rows.append(
                    Thread(
                        url=row["url"],
                        project=row["project"],
                        cause=row["cause"].strip(),
                        entry=row["entry"].strip(),
                        established_by=row["established_by"].strip(),
                        source=f"{path.name}:{lineno}",
                    )
                )
    return rows


def read_causes(path: Path) -> dict[str, str]:
    """`cause<TAB>target` lines (comments with #): the survey's words, or one thread's URL,
    mapped to an entry id or a class."""
    mapping: dict[str, str] = {}
    if not path.exists():
        return mapping
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        # a comment starts a line or follows a space (a URL may hold a '#')
        line = "" if line.lstrip().startswith("#") else line.split(" #", 1)[0].strip()
        if not line:
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise SurveyError(f"{path}:{lineno}: want 'cause<TAB>entry-id or class'")
        cause, target = (p.strip() for p in parts)
        if cause in mapping:
            raise SurveyError(f"{path}:{lineno}: cause {cause!r} mapped twice")
        mapping[cause] = target
    return mapping


def classify(thread: Thread, causes: dict[str, str], kb_ids: frozenset[str]) -> Classified:
    """Where a thread's cause lands today: a mapping of the thread's own URL first (one survey
    label can cover threads that turned out to be different failures), then the mapping of its
    cause, then the cause itself or the recorded entry when either is an entry id."""
    target = causes.get(thread.url) or causes.get(thread.cause, "")
    if not target:
        for candidate in (thread.entry, thread.cause):
            if candidate in kb_ids:
                target = candidate
                break
    return Classified(thread, target)


@dataclass(frozen=True)
class Figures:
    threads: int
    pull_requests: int  # fix PRs read while sampling: not user reports, left out of the shares
    unknown: int  # no cause named
    not_failures: int
    out_of_scope: int
    unspecific: int
    failures: int  # named, specific, in scope: the denominator of coverage
    covered: int
    established: int  # failures whose cause the thread established
    established_covered: int
    ranking: tuple[tuple[str, int, bool], ...]  # (cause or entry id, threads, covered)

    @property
    def coverage(self) -> float:
        return self.covered / self.failures if self.failures else 0.0

    @property
    def established_coverage(self) -> float:
        return self.established_covered / self.established if self.established else 0.0


def covering_entry(folder: Path, kb_ids: frozenset[str]) -> Callable[[str, str], str | None]:
    """For a cause named before its entry existed (a corpus case's proposed `expect`), a function
    of (label, thread URL) giving the entry that covers it now by the survey's own account: the
    thread's mapping in causes.tsv, then the label's, then how the survey classifies that thread
    (so a label mapped for the survey counts for the corpus case of the same thread). None where
    the survey names no entry (a class is not an entry: the case keeps its label)."""
    causes = read_causes(folder / "causes.tsv")
    by_url = {t.url: classify(t, causes, kb_ids).target for t in read_threads(folder)}

    def resolve(label: str, url: str) -> str | None:
        for target in (causes.get(url), causes.get(label), by_url.get(url)):
            if target in kb_ids:
                return target
        return None

    return resolve


def is_pull_request(url: str) -> bool:
    """A pull request (or merge request) is a fix someone wrote, not a failure a user brought:
    it tells which bugs exist, not how often users meet them."""
    return "/pull/" in url or "/merge_requests/" in url


def figures(rows: Iterable[Classified], kb_ids: frozenset[str]) -> Figures:
    """Headline counts, and the failures ranked by how many threads show them (an entry's
    threads are pooled whatever words the survey used)."""
    counts: Counter[str] = Counter()
    covered_keys: set[str] = set()
    tally = Counter()
    for row in rows:
        t, target = row.thread, row.target
        tally["threads"] += 1
        if is_pull_request(t.url):
            tally["pulls"] += 1
            continue
        if t.cause == UNKNOWN:
            tally["unknown"] += 1
            continue
        if target in CLASSES:
            tally[target] += 1
            continue
        tally["failures"] += 1
        established = t.established_by in ESTABLISHED
        tally["established"] += established
        key = target if target in kb_ids else t.cause
        counts[key] += 1
        if target in kb_ids:
            covered_keys.add(key)
            tally["covered"] += 1
            tally["established_covered"] += established
    ranking = tuple(
        (key, n, key in covered_keys)
        for key, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    return Figures(
        threads=tally["threads"],
        pull_requests=tally["pulls"],
        unknown=tally["unknown"],
        not_failures=tally[NOT_A_FAILURE],
        out_of_scope=tally[OUT_OF_SCOPE],
        unspecific=tally[UNSPECIFIC],
        failures=tally["failures"],
        covered=tally["covered"],
        established=tally["established"],
        established_covered=tally["established_covered"],
        ranking=ranking,
    )


def check_causes(causes: dict[str, str], kb_ids: frozenset[str]) -> list[str]:
    """Mapping targets that are neither an entry id nor a class (a renamed or deleted entry)."""
    return [
        f"{c} -> {t}" for c, t in sorted(causes.items()) if t not in kb_ids and t not in CLASSES
    ]


def survey(folder: Path, kb_ids: frozenset[str]) -> Figures:
    causes = read_causes(folder / "causes.tsv")
    bad = check_causes(causes, kb_ids)
    if bad:
        raise SurveyError(f"{folder / 'causes.tsv'}: unknown targets: {', '.join(bad)}")
    return figures((classify(t, causes, kb_ids) for t in read_threads(folder)), kb_ids)


def render(fig: Figures, top: int = 40) -> str:
    pct = lambda n, d: f"{100 * n / d:.1f}%" if d else "-"  # noqa: E731
    lines = [
        f"threads read: {fig.threads}",
        f"  pull requests (fixes, not user reports; left out below): {fig.pull_requests}",
        f"  no cause named in the thread: {fig.unknown}",
        f"  not a failure: {fig.not_failures}; out of scope: {fig.out_of_scope}; "
        f"cause too unspecific for an entry: {fig.unspecific}",
        f"failure threads with a named cause: {fig.failures}",
        f"  with an entry: {fig.covered} ({pct(fig.covered, fig.failures)})",
        f"  of those the thread established: {fig.established}, "
        f"with an entry {fig.established_covered} ({pct(fig.established_covered, fig.established)})",
        "",
        "| rank | failure | threads | cumulative share | entry |",
        "|---|---|---|---|---|",
    ]
    running = 0
    for i, (key, n, covered) in enumerate(fig.ranking[:top], start=1):
        running += n
        lines.append(
            f"| {i} | `{key}` | {n} | {pct(running, fig.failures)} | {'yes' if covered else 'no'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from .kb import default_kb_dir, load_kb

    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else default_kb_dir() / "survey"
    try:
        kb_ids = frozenset(e.id for e in load_kb(default_kb_dir()).entries)
        print(render(survey(folder, kb_ids)))
    except SurveyError as exc:
        print(f"denpex-kb survey: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `... | head`: the reader has what it wanted
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
