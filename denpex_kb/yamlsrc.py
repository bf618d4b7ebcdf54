"""Strict YAML reading that remembers where every value came from.

PyYAML's safe loader silently keeps the last of two duplicate keys and cannot tell us the line
of a nested value. Entries are written by hand, so both matter: we compose the node graph
ourselves, refuse anything but plain YAML types, and record a (line, column) for every path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

Path = tuple[str | int, ...]

_PLAIN_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:timestamp",
}


@dataclass(frozen=True)
class Located:
    """A parsed document plus the 1-based (line, column) of every value and mapping key."""

    data: Any
    values: dict[Path, tuple[int, int]]
    keys: dict[Path, tuple[int, int]]

    def where(self, path: Path) -> tuple[int, int]:
        """Position of the value at `path`, or of its nearest located ancestor."""
        p = tuple(path)
        while p not in self.values and p:
            p = p[:-1]
        return self.values.get(p, (1, 1))

    def where_key(self, path: Path) -> tuple[int, int]:
        """Position of the mapping key that ends `path` (falls back to the value)."""
        return self.keys.get(tuple(path)) or self.where(path)


class YamlProblem(Exception):
    """A YAML document that cannot be accepted; carries a 1-based position."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.message = message


def _pos(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


# Bounds on what one document may cost. An entry is a few hundred values nested a few levels;
# these are far above that and far below what hurts: a "billion laughs" alias bomb expands to
# more than MAX_VALUES values and is refused at the alias that crosses the budget, and nesting
# deeper than MAX_DEPTH is refused before anything recursive (composer, builder) sees it.
MAX_VALUES = 100_000
MAX_DEPTH = 64


class _Loader(yaml.SafeLoader):
    """The safe loader, refusing nesting deeper than MAX_DEPTH while it composes (before the
    composer's own recursion can run out of stack)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):  # noqa: ANN001, ANN201 - PyYAML's signature
        if self.check_event(yaml.MappingStartEvent, yaml.SequenceStartEvent):
            if self._depth >= MAX_DEPTH:
                m = self.peek_event().start_mark
                raise YamlProblem(
                    m.line + 1, m.column + 1, f"YAML nested deeper than {MAX_DEPTH} levels"
                )
            self._depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
        return super().compose_node(parent, index)


# libyaml's composer, where PyYAML was built with it: about 25x faster than the pure-Python one,
# with the same nodes and marks (tests/test_kb_validation.py compares the two on every entry).
# It has no hook for the depth check while composing, so the depth is checked on its node graph
# instead; libyaml bounds its own nesting, so composing cannot exhaust the stack.
C_LOADER = getattr(yaml, "CSafeLoader", None)


def _too_deep(root: yaml.Node) -> yaml.Node | None:
    """The first collection nested deeper than MAX_DEPTH, walking the node graph (aliases make
    it a DAG: each node is visited once, at the least depth it is reached by)."""
    seen: dict[int, int] = {}
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, yaml.CollectionNode) or seen.get(id(node), 1 << 30) <= depth:
            continue
        if depth > MAX_DEPTH:
            return node
        seen[id(node)] = depth
        children = node.value if isinstance(node, yaml.SequenceNode) else [v for _, v in node.value]
        stack.extend((child, depth + 1) for child in reversed(children))
    return None


def _compose(text: str, use_c: bool) -> yaml.Node | None:
    if not (use_c and C_LOADER):
        return yaml.compose(text, Loader=_Loader)
    try:
        node = yaml.compose(text, Loader=C_LOADER)
    except yaml.MarkedYAMLError as exc:
        if "nesting depth" not in str(exc.problem):
            raise
        # libyaml's own limit (1,000) is far past ours: the Python composer stops at ours, at
        # the collection that crosses it, and says so in the same words as for shallower files.
        return yaml.compose(text, Loader=_Loader)
    deep = _too_deep(node) if node is not None else None
    if deep is not None:
        line, col = _pos(deep)
        raise YamlProblem(line, col, f"YAML nested deeper than {MAX_DEPTH} levels")
    return node


def load_located(text: str, use_c: bool = True) -> Located:
    """Parse one YAML document strictly. Raises YamlProblem on syntax errors, non-plain tags,
    duplicate keys, non-string keys, empty documents, nesting deeper than MAX_DEPTH and
    documents that expand (through aliases) to more than MAX_VALUES values. `use_c=False`
    forces the pure-Python composer (the reference the C one is tested against)."""
    try:
        node = _compose(text, use_c)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise YamlProblem(line, col, f"YAML syntax error: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:  # pragma: no cover - composer raises marked errors
        raise YamlProblem(1, 1, f"YAML error: {exc}") from None
    if node is None:
        raise YamlProblem(1, 1, "file is empty")
    values: dict[Path, tuple[int, int]] = {}
    keys: dict[Path, tuple[int, int]] = {}
    constructor = yaml.constructor.SafeConstructor()
    budget = [MAX_VALUES]

    def build(n: yaml.Node, path: Path) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            line, col = _pos(n)
            raise YamlProblem(
                line,
                col,
                f"YAML expands to more than {MAX_VALUES:,} values (aliases repeating "
                "anchored content: an alias bomb?)",
            )
        values[path] = _pos(n)
        if n.tag not in _PLAIN_TAGS:
            line, col = _pos(n)
            raise YamlProblem(line, col, f"unsupported YAML tag {n.tag!r} (only plain YAML types)")
        if isinstance(n, yaml.MappingNode):
            out: dict[str, Any] = {}
            for knode, vnode in n.value:
                if not isinstance(knode, yaml.ScalarNode) or knode.tag != "tag:yaml.org,2002:str":
                    line, col = _pos(knode)
                    raise YamlProblem(line, col, "mapping keys must be plain strings")
                key = knode.value
                if key in out:
                    line, col = _pos(knode)
                    first = keys[path + (key,)]
                    raise YamlProblem(
                        line, col, f"duplicate key {key!r} (first defined at line {first[0]})"
                    )
                keys[path + (key,)] = _pos(knode)
                out[key] = build(vnode, path + (key,))
            return out
        if isinstance(n, yaml.SequenceNode):
            return [build(item, path + (i,)) for i, item in enumerate(n.value)]
        if n.tag == "tag:yaml.org,2002:timestamp":
            return n.value  # a date in prose stays the text the author wrote
        return constructor.construct_object(n, deep=True)

    return Located(build(node, ()), values, keys)


def format_path(path: Path) -> str:
    """`('match', 'any', 1)` -> `match.any[1]`; the empty path is `(entry)`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(entry)"
