"""PEP 440 versions and specifier sets, the part the pack's version conditions use, evaluated as
`packaging` does with `prereleases=True`: `==`, `!=`, `<`, `<=`, `>`, `>=`, `~=` and `==X.*`,
comma-separated (`===` is refused). The twin of js/denpex-engine/version.js; kept here so that a
log that prints versions does not pay for importing `packaging` (tests/test_version.py checks
both against it).

Version strings come from log lines, so the parse runs through RE2 like every other pattern on
log text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .attribute import compile_rx

_VERSION = compile_rx(
    rb"(?i)^v?(?:([0-9]+)!)?([0-9]+(?:\.[0-9]+)*)"
    rb"(?:[-_.]?(alpha|a|beta|b|preview|pre|c|rc)[-_.]?([0-9]+)?)?"
    rb"(?:-([0-9]+)|[-_.]?(post|rev|r)[-_.]?([0-9]+)?)?"
    rb"(?:[-_.]?(dev)[-_.]?([0-9]+)?)?"
    rb"(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?$"
)
_SPEC = compile_rx(rb"^\s*(~=|===|==|!=|<=|>=|<|>)\s*([^\s,;]+)\s*$")
_PRE = {"alpha": "a", "a": "a", "beta": "b", "b": "b", "c": "rc", "pre": "rc", "preview": "rc"}
_PRE_ORDER = {"a": 0, "b": 1, "rc": 2}
_MAX_LEN = 200  # a longer "version" is no version (and bounds the work on hostile input)


@dataclass(frozen=True)
class Version:
    epoch: int
    release: tuple[int, ...]
    pre: tuple[str, int] | None
    post: int | None
    dev: int | None
    local: tuple[int | str, ...] | None

    @property
    def is_prerelease(self) -> bool:
        return self.pre is not None or self.dev is not None

    def public(self) -> Version:
        return Version(self.epoch, self.release, self.pre, self.post, self.dev, None)

    def base(self) -> Version:
        return Version(self.epoch, self.release, None, None, None, None)

    def key(self, with_local: bool = True) -> tuple:
        release = self.release
        while len(release) > 1 and release[-1] == 0:
            release = release[:-1]  # 1.0 == 1.0.0
        if self.pre is None and self.post is None and self.dev is not None:
            pre: tuple[int, int] = (-1, 0)  # a dev-only release sorts before its pre-releases
        elif self.pre is None:
            pre = (3, 0)
        else:
            pre = (_PRE_ORDER[self.pre[0]], self.pre[1])
        post = -1 if self.post is None else self.post
        dev = float("inf") if self.dev is None else self.dev
        local: tuple = ()
        if with_local and self.local is not None:
            # numbers sort after strings; a version with a local part after one without
            local = (1, *((1, p, "") if isinstance(p, int) else (0, 0, p) for p in self.local))
        return (self.epoch, release, pre, post, dev, local)


def parse_version(text: str) -> Version | None:
    """The version, or None when `text` is not a PEP 440 version."""
    raw = text.strip()
    if len(raw) > _MAX_LEN:
        return None
    m = _VERSION.search(raw.encode("utf-8", "replace"))
    if m is None:
        return None
    g = [x.decode("ascii") if x is not None else None for x in m.groups()]
    pre = (_PRE.get(g[2].lower(), g[2].lower()), int(g[3] or 0)) if g[2] else None
    if g[4] is not None:
        post: int | None = int(g[4])
    elif g[5] is not None:
        post = int(g[6] or 0)
    else:
        post = None
    local = (
        tuple(
            int(p) if p.isdigit() else p
            for p in g[9].lower().replace("-", ".").replace("_", ".").split(".")
        )
        if g[9]
        else None
    )
    return Version(
        epoch=int(g[0] or 0),
        release=tuple(int(x) for x in g[1].split(".")),
        pre=pre,
        post=post,
        dev=int(g[8] or 0) if g[7] else None,
        local=local,
    )


def _cmp(a: Version, b: Version, with_local: bool = True) -> int:
    ka, kb = a.key(with_local), b.key(with_local)
    return (ka > kb) - (ka < kb)


def _prefix_eq(v: Version, spec: Version) -> bool:
    if v.epoch != spec.epoch:
        return False
    r = v.release
    return all((r[i] if i < len(r) else 0) == p for i, p in enumerate(spec.release))


Predicate = Callable[[Version], bool]


def _one(text: str) -> Predicate | None:  # noqa: PLR0911 - one return per operator
    m = _SPEC.search(text.encode("utf-8", "replace"))
    if m is None:
        return None
    op, vs = m.group(1).decode("ascii"), m.group(2).decode("utf-8", "replace")
    if op in ("==", "!=") and vs.endswith(".*"):
        pv = parse_version(vs[:-2])
        if pv is None or pv.local is not None:
            return None
        if op == "==":
            return lambda v: _prefix_eq(v, pv)
        return lambda v: not _prefix_eq(v, pv)
    sv = parse_version(vs)
    if sv is None or op == "===":
        return None
    if op == ">=":
        return lambda v: _cmp(v.public(), sv) >= 0
    if op == "<=":
        return lambda v: _cmp(v.public(), sv) <= 0
    if op == "<":
        return lambda v: (
            _cmp(v, sv) < 0
            and not (not sv.is_prerelease and v.is_prerelease and _cmp(v.base(), sv.base()) == 0)
        )
    if op == ">":
        return lambda v: (
            _cmp(v, sv) > 0
            and not (sv.post is None and v.post is not None and _cmp(v.base(), sv.base()) == 0)
            and not (v.local is not None and _cmp(v.base(), sv.base()) == 0)
        )
    if op in ("==", "!="):
        same = (
            (lambda v: _cmp(v.public(), sv) == 0)
            if sv.local is None
            else (lambda v: _cmp(v, sv) == 0)
        )
        return same if op == "==" else (lambda v: not same(v))
    # ~=
    if len(sv.release) < 2:
        return None
    prefix = Version(sv.epoch, sv.release[:-1], None, None, None, None)
    return lambda v: _cmp(v.public(), sv) >= 0 and _prefix_eq(v, prefix)


def specifier_set(text: str) -> Predicate | None:
    """A specifier set (`<0.19.1,>=0.17.1`) as a predicate on versions, or None if invalid."""
    preds = [_one(p) for p in text.split(",") if p.strip()]
    if any(p is None for p in preds):
        return None
    return lambda v: all(p(v) for p in preds)  # type: ignore[misc]
