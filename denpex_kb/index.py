"""Full-text index of the knowledge base: links any pasted error text to the closest entries.

The rest of the package sees only `build_index`, `open_index` / `cached_index` and
`TextIndex.search`; whoosh stays behind this module (its forks' maintenance is uncertain, so the
backend must stay replaceable). Tokenising lives in `errortext`, which knows nothing of whoosh.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .digest import sha256

if TYPE_CHECKING:  # the model is needed only to build an index, not to search one
    from .model import Entry, KnowledgeBase

# Bump when tokenising or the indexed fields change: cached indexes of the old form are then
# rebuilt instead of being searched with a new query analysis.
INDEX_FORMAT = "denpex-index/2"
MARKER = "denpex-index.json"
PHRASE_LINES = 12
PHRASE_SLOP = 3
PHRASE_BOOST = 4.0


@dataclass(frozen=True)
class Hit:
    id: str
    title: str
    phase: str
    summary: str
    score: float
    snippet: str
    matched_terms: tuple[str, ...]


# --- what gets indexed ------------------------------------------------------------------------


def regex_literal_text(pattern: str) -> str:
    """The readable words of a regex: `\\[Errno 28\\] No space` -> `[Errno 28] No space`.

    Escaped characters are literal text; character classes, groups, quantifiers and
    alternation bars become spaces."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            out.append(" " if nxt in "dDsSwWbBAzZ" else nxt)
            i += 2
        elif c == "[":
            j = i + 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            out.append(" ")
            i = j + 1
        elif c == "(" and pattern.startswith("?", i + 1):
            j = i + 2
            while j < n and pattern[j] not in ":)":
                j += 1
            out.append(" ")
            i = j + 1
        elif c == "{":
            j = pattern.find("}", i)
            out.append(" ")
            i = n if j < 0 else j + 1
        elif c in "()|?*+^$.":
            out.append(" ")
            i += 1
        else:
            out.append(c)
            i += 1
    return " ".join("".join(out).split())


def error_lines(entry: Entry) -> list[str]:
    """Error strings of an entry: its signals' literal text and quotes, plus the example lines
    that its own (non-veto) signals match."""
    lines: list[str] = []
    positive = [entry.signal(s) for s in dict.fromkeys(entry.match.all + entry.match.any)]
    compiled = [re.compile(s.pattern, re.IGNORECASE if s.ignore_case else 0) for s in positive]
    # Real lines first: the snippet shown for a hit prefers them over a regex's bare words.
    for ex in entry.examples:
        if ex.expect != "match":
            continue
        for line in ex.log.splitlines():
            if len(line) < 400 and any(c.search(line) for c in compiled):
                lines.append(line.strip())
    for sig in positive:
        lines.append(regex_literal_text(sig.pattern))
        if sig.source.quote:
            lines.append(sig.source.quote)
    return list(dict.fromkeys(ln for ln in lines if ln))


def entry_document(entry: Entry) -> dict[str, str]:
    body = "\n".join(
        [
            entry.mechanism,
            *entry.symptoms,
            *(n.claim for n in entry.not_the_cause),
            *entry.fix.steps,
        ]
    )
    return {
        "id": entry.id,
        "title": entry.title,
        "phase": entry.phase,
        "summary": entry.summary,
        "errors": "\n".join(error_lines(entry)),
        "tags": " ".join([*entry.tags, entry.phase, entry.failure_class]),
        "body": body,
    }


# A file modified this recently may change again within the file system's timestamp
# granularity without its size or times changing: its stat says nothing, so it is read.
RACY_SECONDS = 3.0
_FINGERPRINTS: dict[str, str] = {}  # stat signature -> content fingerprint, this process


def kb_fingerprint(kb_dir: str | Path) -> str:
    """Content hash of a knowledge-base folder, the index format and the analysis code: the
    cache key.

    Reading and hashing every file of the knowledge base (captured logs included) on each call
    is most of a warm `search`; so the hash is remembered per stat signature (every file's
    path, size, inode, mtime and ctime, and the code's bytes), in this process and in the
    per-user cache. A folder with a file modified in the last RACY_SECONDS is always hashed."""
    root = Path(kb_dir)
    # The analysis code too: an edited tokenizer must not query an index built by the old one.
    here = Path(__file__).resolve().parent
    code = b""
    for module in ("errortext.py", "_whoosh.py", "index.py"):
        try:
            code += (here / module).read_bytes()
        except OSError:
            pass
    files: list[tuple[str, Path]] = []
    sig = sha256(INDEX_FORMAT.encode() + b"\0" + os.fsencode(str(root.resolve())))
    sig.update(sha256(code).digest())
    racy = False
    now = time.time()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".") or "/." in rel:
            continue
        files.append((rel, path))
        try:
            st = path.stat()
        except OSError:
            racy = True
            continue
        racy = racy or now - max(st.st_mtime, st.st_ctime) < RACY_SECONDS
        sig.update(f"{rel}\0{st.st_size} {st.st_ino} {st.st_mtime_ns} {st.st_ctime_ns}\0".encode())
    key = sig.hexdigest()[:32]
    memo = cache_dir() / "fingerprints" / f"index-{key}"  # not under index/: nothing was built
    if not racy:
        if key in _FINGERPRINTS:
            return _FINGERPRINTS[key]
        with contextlib.suppress(OSError, UnicodeDecodeError):
            got = memo.read_text().strip()
            if len(got) == 64 and all(c in "0123456789abcdef" for c in got):
                _FINGERPRINTS[key] = got
                return got
    h = sha256(INDEX_FORMAT.encode())
    h.update(code)
    for rel, path in files:
        h.update(rel.encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    fp = h.hexdigest()
    if not racy:
        _FINGERPRINTS[key] = fp
        with contextlib.suppress(OSError):
            from .atomic import write_file

            memo.parent.mkdir(parents=True, exist_ok=True)
            write_file(memo, (fp + "\n").encode())
    return fp


@contextlib.contextmanager
def _seeded_random(seed: str) -> Iterator[None]:
    """whoosh names segments with the global `random`; seed it so builds are byte-identical,
    and leave the caller's random state as it was."""
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


def build_index(kb: KnowledgeBase, dest: str | Path, fingerprint: str | None = None) -> Path:
    """Build the index of `kb` into folder `dest`, atomically: it is written beside `dest` and
    renamed into place only when complete, so a crash never leaves a half-built index."""
    from . import atomic
    from ._whoosh import whoosh_schema, windex

    dest = Path(dest)
    fingerprint = fingerprint or kb_fingerprint(kb.root)
    with atomic.lock(dest):
        atomic.remove_stale(dest)
        tmp = atomic.make_tmp_dir(dest)
        try:
            with _seeded_random(fingerprint):
                ix = windex.create_in(str(tmp), whoosh_schema())
                writer = ix.writer(compound=False)
                for entry in sorted(kb.entries, key=lambda e: e.id):
                    writer.add_document(**entry_document(entry))
                writer.commit(optimize=True)
                ix.close()
            marker = {
                "format": INDEX_FORMAT,
                "fingerprint": fingerprint,
                "entries": len(kb.entries),
            }
            atomic.write_file(tmp / MARKER, (json.dumps(marker, sort_keys=True) + "\n").encode())
            _fix_modes(tmp)
            atomic.replace_dir(tmp, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return dest


def _fix_modes(folder: Path) -> None:
    """whoosh writes its files with mkstemp's 0600; give them the user's umask."""
    from .atomic import umask

    for p in folder.rglob("*"):
        if p.is_file() and not p.is_symlink():
            os.chmod(p, 0o666 & ~umask())


class IndexError_(Exception):
    """The index folder is missing, incomplete or of another format."""


class TextIndex:
    """A read-only handle on a built index."""

    def __init__(self, path: str | Path) -> None:
        from ._whoosh import windex  # whoosh is imported there, leanly, before anything else

        self.path = Path(path)
        try:
            marker = json.loads((self.path / MARKER).read_text())
        except (OSError, ValueError):
            raise IndexError_(f"{self.path}: not a complete denpex-kb index") from None
        if marker.get("format") != INDEX_FORMAT:
            raise IndexError_(
                f"{self.path}: index format {marker.get('format')!r}, need {INDEX_FORMAT!r}"
            )
        self.fingerprint: str = marker["fingerprint"]
        self._ix = windex.open_dir(str(self.path))

    def search(self, text: str, limit: int = 5) -> list[Hit]:
        """Entries ranked by how well they match `text` (a phrase, an error line or a whole log)."""
        from whoosh import query as Q
        from whoosh import scoring

        from . import errortext

        if len(text) > 2000 or text.count("\n") > 20:
            text = "\n".join(errortext.salient_lines(text))
        qterms = errortext.terms(text)[:80]
        if not qterms:
            return []
        clauses: list[object] = [
            Q.Term(f, t) for t in qterms for f in ("title", "summary", "errors", "tags", "body")
        ]
        # An entry that quotes the pasted line itself (same words in the same order, volatile
        # parts aside) beats one that merely shares its words.
        for line in text.splitlines()[:PHRASE_LINES]:
            words = [t for t, _, _ in errortext.tokens(line) if not any(c.isdigit() for c in t)]
            if len(words) >= 3:
                clauses.append(Q.Phrase("errors", words[:24], slop=PHRASE_SLOP, boost=PHRASE_BOOST))
        with self._ix.searcher(weighting=scoring.BM25F()) as s:
            results = s.search(Q.Or(clauses), limit=limit)
            hits = []
            for r in results:
                fields = r.fields()
                stored = " ".join((fields["title"], fields["summary"], fields["errors"]))
                shown = set(errortext.terms(stored))
                hits.append(
                    Hit(
                        id=fields["id"],
                        title=fields["title"],
                        phase=fields["phase"],
                        summary=fields["summary"],
                        score=round(float(r.score), 4),
                        snippet=_snippet(fields, set(qterms)),
                        matched_terms=tuple(t for t in qterms if t in shown),
                    )
                )
        return hits

    def close(self) -> None:
        self._ix.close()


def _snippet(fields: dict[str, str], qterms: set[str]) -> str:
    """The stored line sharing the most terms with the query: why this entry matched."""
    from . import errortext

    best, best_score = fields["summary"], 0
    for line in [*fields["errors"].splitlines(), fields["title"], fields["summary"]]:
        score = len(qterms & set(errortext.terms(line)))
        if score > best_score:
            best, best_score = line, score
    return best if len(best) <= 240 else best[:237] + "..."


# --- the per-user cache -----------------------------------------------------------------------


def cache_dir() -> Path:
    """Where per-user indexes live: $DENPEX_KB_CACHE, else $XDG_CACHE_HOME/denpex-kb."""
    if os.environ.get("DENPEX_KB_CACHE"):
        return Path(os.environ["DENPEX_KB_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "denpex-kb"


def _layers_fingerprint(roots: list[Path]) -> str:
    if len(roots) == 1:
        return kb_fingerprint(roots[0])
    joined = "\0".join(["layers", *(kb_fingerprint(r) for r in roots)])
    return sha256(joined.encode()).hexdigest()


def _kb_roots(kb_dir: str | Path | list[str | Path] | tuple[str | Path, ...] | None) -> list[Path]:
    """kb.kb_roots without importing kb (JSON Schema, YAML): a warm search needs neither."""
    if isinstance(kb_dir, str | Path):
        return [Path(kb_dir)]
    roots = [Path(r) for r in kb_dir or ()]
    if roots:
        return roots
    from .bundle import BundleError, default_kb_dir

    try:
        return [default_kb_dir()]
    except BundleError:
        from .kb import kb_roots

        return kb_roots(None)  # raises the KBError the caller reports


def cached_index(
    kb_dir: str | Path | list[str | Path] | tuple[str | Path, ...] | None = None,
) -> TextIndex:
    """Open the index for the knowledge base at `kb_dir` (several folders: layered, as
    `kb.load_kb` does), building it into the per-user cache only when no index exists for its
    current content (never a stale one, never a rebuild)."""
    if kb_dir is None:
        prebuilt = _prebuilt_index()
        if prebuilt is not None:
            return prebuilt
    roots = _kb_roots(kb_dir)
    for _ in range(3):
        fingerprint = _layers_fingerprint(roots)
        path = cache_dir() / "index" / fingerprint[:24]
        if (path / MARKER).is_file():
            return TextIndex(path)
        from .kb import load_kb

        kb = load_kb(roots)
        if _layers_fingerprint(roots) != fingerprint:
            continue  # edited while we read it: what we loaded is neither version's index
        try:
            build_index(kb, path, fingerprint)
        except OSError:
            # A read-only or full cache is no reason to fail: build a private one for this run.
            return TextIndex(build_index(kb, _private_dir() / "index", fingerprint))
        return TextIndex(path)
    raise IndexError_(f"knowledge base {kb_dir} kept changing while it was read; try again")


def _prebuilt_index() -> TextIndex | None:
    """The index the wheel build made from the bundled knowledge base, when it still belongs
    to the bundled files (its marker's fingerprint covers them and the analysis code)."""
    from .bundle import PREBUILT_INDEX, locate

    found = locate()
    if found is None or not found.installed:
        return None
    path = found.prebuilt_dir / PREBUILT_INDEX
    try:
        marker = json.loads((path / MARKER).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("fingerprint") != kb_fingerprint(found.kb_dir):
        return None
    try:
        return TextIndex(path)
    except IndexError_:
        return None


def _private_dir() -> Path:
    import atexit

    tmp = Path(tempfile.mkdtemp(prefix="denpex-kb-"))
    atexit.register(shutil.rmtree, tmp, True)
    return tmp


# Words every Python error line shares: a suggestion resting on these alone is no suggestion.
GENERIC_TERMS = frozenset(
    "error errors exception value valueerror runtime runtimeerror assertion assertionerror key "
    "keyerror type typeerror os oserror attribute attributeerror index indexerror import "
    "importerror module modulenotfounderror not found failed failure rank step line file "
    "traceback call last most recent raise raised".split()
)
# Words that say nothing about which failure it is, beyond the index's own stop words: a query
# that shares only these with an entry (`some`, `could`) is not related to it.
_FUNCTION_WORDS = frozenset(
    "about after again all also any been before being but can cannot could did do does done "
    "each few had how if into may might more most must other our over same should so some such "
    "unknown unexpected "
    "than then there these they those too under very we what when where which who why would".split()
)
UNINFORMATIVE_TERMS = GENERIC_TERMS | _FUNCTION_WORDS


def related_entries(
    text: str, kb_dir: str | Path | None = None, limit: int = 3
) -> list[dict[str, object]]:
    """Suggestions for errors no rule recognised: the closest entries by text, each with an
    honest, low confidence: 0.3 times the share of the query's terms the entry's own text
    shares (text similarity is a hint, never a diagnosis). Entries that share only generic
    words (`ValueError`, `failed`, `rank`, `some`) are not suggested at all."""
    from . import errortext  # here, not at import: `match` imports this module on every run

    qterms = set(errortext.terms(text))
    informative = qterms - UNINFORMATIVE_TERMS
    if not informative:
        return []
    ix = cached_index(kb_dir)
    try:
        hits = ix.search(text, limit=limit * 3)
    finally:
        ix.close()
    out: list[dict[str, object]] = []
    for h in hits:
        shared = set(h.matched_terms)
        if not shared & informative:
            continue
        confidence = round(0.3 * len(shared) / len(qterms), 3)
        out.append({"id": h.id, "title": h.title, "confidence": confidence, "why": h.snippet})
        if len(out) == limit:
            break
    return sorted(out, key=lambda r: -float(r["confidence"]))  # type: ignore[arg-type]
