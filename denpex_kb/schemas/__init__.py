"""The published JSON Schemas (draft 2020-12) and their strict forms.

The rule pack and report schemas are what a consumer of any minor version of major 1 validates
with: open where the compatibility policy (docs/rule-pack-format.md, "Compatibility policy")
promises that a later minor version only adds. Every object accepts members it does not list,
and the vocabularies written `{"anyOf": [{"enum": [...]}, {"$ref": "#/$defs/open_value"}]}`
accept values they do not list.

`strict_schema` derives the form a producer's own output must pass: every object that lists
its `properties` and says nothing about others is closed, and every open vocabulary is reduced
to its listed values. An object that is open on purpose says `"additionalProperties": true`.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import resources
from typing import Any

OPEN_VALUE_REF = "#/$defs/open_value"


@cache
def _load(name: str) -> str:
    return resources.files(__name__).joinpath(f"{name}.schema.json").read_text("utf-8")


def load_schema(name: str) -> dict[str, Any]:
    """The published schema `name` (`rulepack`, `report`, `entry`): a fresh copy."""
    return json.loads(_load(name))


def _is_open_vocabulary(node: dict[str, Any]) -> bool:
    alts = node.get("anyOf")
    return (
        isinstance(alts, list)
        and len(alts) == 2
        and "enum" in alts[0]
        and alts[1] == {"$ref": OPEN_VALUE_REF}
    )


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The strict form of a published schema (a copy; the argument is not changed)."""

    def close(node: Any) -> Any:
        if isinstance(node, list):
            return [close(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: close(v) for k, v in node.items()}
        if _is_open_vocabulary(node):
            del out["anyOf"]
            out["enum"] = copy.deepcopy(node["anyOf"][0]["enum"])
        if "properties" in node and "additionalProperties" not in node:
            out["additionalProperties"] = False
        return out

    return close(schema)
