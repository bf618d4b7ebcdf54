"""Tokenising and normalising error text, independent of any search backend.

Error text is not prose. `torch.distributed.DistBackendError` must be found by
`DistBackendError` and the other way round; `Errno 28`, `ENOSPC`, `Xid 79` and `exitcode -9`
must stay searchable; while hex addresses, PIDs, sizes, paths, rank numbers and timestamps
differ between two instances of the same failure and must not make them look different.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# Volatile parts, replaced before tokenising. Order matters: timestamps before numbers, etc.
_VOLATILE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\x1b\[[0-9;]*[A-Za-z]"), " "),  # ANSI colour codes
    (
        re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
        " ",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), " "),  # bare clock times
    # A zero-sized shape is the mark of a ZeRO-3 partitioned placeholder, not a volatile count.
    (re.compile(r"\bSize\(\[0\]\)"), " Size zerosize "),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), " hexaddr "),
    (re.compile(r"\b[0-9a-f]{12,}\b"), " hexid "),  # git hashes, uuids without dashes
    (re.compile(r"\[(?:default|rank|Rank )\d+\]:?"), " "),  # launcher rank prefixes
    # sizes: keep the unit, drop the amount ("20.00 MiB" -> "mib")
    (re.compile(r"\b\d+(?:\.\d+)?\s*(KiB|MiB|GiB|TiB|KB|MB|GB|TB|bytes)\b"), r" \1 "),
)

# Numbers worth keeping: errno values, Xid codes, exit codes and signal numbers are short, and
# only meaningful after their keyword. Everything else numeric is noise.
_KEEP_NUMBER_AFTER = re.compile(
    r"(?i)\b(errno|xid|exitcode|exit code|return code|signal|sig|error code|code)"
    r"\s*(?:\([^)]{0,40}\))?\s*[=:]?\s*\[?(-?\d{1,4})\b"
)
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[~.]?/[\w.+@-]+){2,}/?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.:][A-Za-z_][A-Za-z0-9_]*)*|-?\d+(?:\.\d+)?")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")

STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were "
    "will with not no you your".split()
)


def normalise(text: str) -> str:
    """Remove the parts of a log line that differ between two instances of one failure."""
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    # Paths: keep the file name (engine.py is informative, /home/alice/run1 is not).
    return _PATH.sub(lambda m: " " + m.group(0).rstrip("/").rsplit("/", 1)[-1] + " ", text)


def _parts(token: str) -> list[str]:
    """Sub-tokens of a compound token: dotted, snake_case and CamelCase pieces."""
    out: list[str] = []
    pieces = re.split(r"[.:]", token)
    for piece in pieces:
        if len(pieces) > 1:
            out.append(piece)
        subs = piece.split("_")
        if len(subs) > 1 and len(pieces) > 1:
            out.append(piece)
        for sub in subs:
            if len(subs) > 1:
                out.append(sub)
            if len(sub) > 4:
                out.extend(_CAMEL.findall(sub))
    return [p for p in out if p and not p.isdigit()]


def tokens(text: str) -> Iterator[tuple[str, int, int]]:
    """Yield (term, start, end) for `text` after normalisation.

    Compound tokens are yielded whole and as parts, so that a search for any of them matches.
    Offsets refer to the normalised text (used only for snippets).
    """
    norm = normalise(text)
    keep_numbers: set[tuple[int, int]] = set()
    for m in _KEEP_NUMBER_AFTER.finditer(norm):
        keep_numbers.add(m.span(2))
    for m in _WORD.finditer(norm):
        tok = m.group(0)
        start, end = m.span()
        if tok[0].isdigit() or tok[0] == "-":
            if (start, end) in keep_numbers:
                yield tok, start, end
            continue
        low = tok.lower()
        if len(low) > 1 and low not in STOPWORDS:
            yield low, start, end
        if len(tok) > 2 and (any(c in tok for c in "._:") or not tok.islower()):
            for part in _parts(tok):
                p = part.lower()
                if p != low and len(p) > 1 and p not in STOPWORDS:
                    yield p, start, end


def terms(text: str) -> list[str]:
    """The distinct search terms of `text`, in first-seen order."""
    seen: dict[str, None] = {}
    for term, _, _ in tokens(text):
        seen.setdefault(term, None)
    return list(seen)


# --- choosing the salient lines of a long paste -------------------------------------------

_SALIENT = re.compile(
    r"Error|Exception|error:|ERROR|FAILED|Failed|failed|Errno|Killed|killed|"
    r"Traceback|Assertion|fatal|Fatal|FATAL|Timeout|timed out|Segmentation fault|"
    r"exitcode|exit code|return code|Xid|SIG[A-Z]+|No space|Too many|out of memory|"
    r"CUDA error|NCCL WARN|Watchdog caught"
)
_FRAME = re.compile(r'File "[^"\n]+", line \d+, in [^\n]+')
_NOISE = re.compile(r"FutureWarning|DeprecationWarning|UserWarning|^\s*warnings\.warn")
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Interrupt)\b")
_MAX_CANDIDATES = 5000
_MAX_PROCESSED = 20_000
_DIGITS = re.compile(rb"\d+")
_TAIL_BYTES = 2_000_000


_salient_re2 = None


def _salient_scanner():  # noqa: ANN202 - re2 has no public types
    """The keyword scan as an RE2 program over bytes: linear time, about 200 MB/s here, where
    Python's re needs seconds for a 50 MB paste."""
    global _salient_re2
    if _salient_re2 is None:
        import re2

        opts = re2.Options()
        opts.log_errors = False
        _salient_re2 = re2.compile(_SALIENT.pattern.encode(), opts)
    return _salient_re2


def salient_lines(text: str | bytes, limit: int = 40) -> list[str]:
    """Pick the lines of a pasted log that say what went wrong.

    Candidate lines are found by one keyword scan over the whole paste, then deduplicated after
    normalisation (512 ranks printing the same error count once). Exception lines come first,
    then the first and the last other error lines (the first error usually started it, the last
    is what killed the job), then the last traceback frames.
    """
    data = text if isinstance(text, bytes) else text.encode("utf-8", errors="replace")
    scanner = _salient_scanner()
    unique: dict[bytes, str] = {}
    offsets: dict[str, int] = {}
    pos = processed = 0
    while len(unique) < _MAX_CANDIDATES:
        m = scanner.search(data, pos)
        if m is None:
            break
        start = data.rfind(b"\n", 0, m.start()) + 1
        end = data.find(b"\n", m.start())
        end = len(data) if end < 0 else end
        pos = end + 1
        processed += 1
        if processed == _MAX_PROCESSED:
            # A paste full of error lines: keep what we have from the start and jump to the
            # end, where the lines that killed the job are, so the cost stays bounded.
            pos = max(pos, len(data) - _TAIL_BYTES)
        raw = data[start:end]
        key = _DIGITS.sub(b"0", raw[:300])  # 512 ranks printing one error count once
        if key in unique:
            continue
        line = raw.decode("utf-8", errors="replace").strip()
        if line and not _NOISE.search(line):
            unique[key] = line[:500]
            offsets.setdefault(line[:500], start)
    lines = list(unique.values())
    exceptions = [ln for ln in lines if _EXCEPTION_LINE.search(_strip_prefix(ln))]
    others = [ln for ln in lines if ln not in exceptions]
    picked = exceptions[: limit // 2]
    half = max(1, (limit - len(picked)) // 2)
    picked += others[:half] + [ln for ln in others[half:][-half:] if ln not in picked]
    seen = set(picked)
    # The last frames of the traceback that ends in the first exception line: where it failed.
    anchor = offsets[exceptions[0]] if exceptions else len(data)
    window = data[max(0, anchor - 8000) : anchor].decode("utf-8", errors="replace")
    for frame in _FRAME.findall(window)[-3:]:
        if frame not in seen:
            seen.add(frame)
            picked.append(frame.strip()[:300])
    tail = data[-4000:].decode("utf-8", errors="replace")
    if not picked:
        # Nothing looks like an error: fall back to the last non-empty lines.
        picked = [ln.strip() for ln in tail.splitlines() if ln.strip()][-10:]
    return picked


_PREFIX = re.compile(
    r"^(?:\[(?:default|rank)\d+\]:|\d+: |[\w.-]+: (?=\[|\w+Error)|\[\d+,\d+\]<std\w+>:)\s*"
)


def _strip_prefix(line: str) -> str:
    return _PREFIX.sub("", line, count=1)
