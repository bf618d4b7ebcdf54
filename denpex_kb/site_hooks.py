"""MkDocs hooks that put the generated hub into a build: `hooks:` in the top-level mkdocs.yml.

The only MkDocs-specific part of the hub. On every build (and every `mkdocs serve` rebuild,
which `watch: [kb]` in mkdocs.yml triggers when an entry changes) it:

1. loads and validates the knowledge base (`extra.denpex.kb_dir`, default `kb/`; a bad entry
   stops the build with every problem listed as FILE:LINE:COL: FIELD: MESSAGE);
2. restricts Material's tags plugin to the vocabulary in `kb/tags.yaml`, so an unknown tag on
   any page fails the build;
3. generates the pages with `denpex_kb.site.generate_hub` and adds them to the build as
   in-memory files next to the hand-written pages of `docs/`, and sets the nav;
4. adds the rule pack and its conformance vectors as downloads (`site.rule_pack_downloads`,
   the same export `denpex-kb build` writes to dist/, so both are byte-identical).

MkDocs loads this file by path (not as `denpex_kb.site_hooks`), so it imports the package
absolutely and keeps no state that other code would need to reach.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

from denpex_kb import site as hubgen

log = logging.getLogger("mkdocs.plugins.denpex")

_state: dict[str, Any] = {}


def _kb_dir(config: MkDocsConfig) -> Path | list[Path]:
    """`extra.denpex.kb_dir`: one folder, or a list of folders layered in order."""
    extra = config.extra.get("denpex") or {}
    raw = extra.get("kb_dir") or "kb"
    here = Path(config.config_file_path or ".").resolve().parent
    paths = [here / Path(p) for p in (raw if isinstance(raw, list) else [raw])]
    return paths[0] if len(paths) == 1 else paths


def _static_pages(docs_dir: Path) -> list[str]:
    if not docs_dir.is_dir():
        return []
    return sorted(p.relative_to(docs_dir).as_posix() for p in docs_dir.rglob("*.md"))


@event_priority(100)  # before the tags plugin builds its validator from tags_allowed
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    from denpex_kb.kb import KBError, load_kb

    kb_dir = _kb_dir(config)
    pre = hubgen.preloaded(kb_dir)  # `denpex-kb build` loaded and exported it already
    if pre is not None:
        kb, downloads = pre
    else:
        try:
            kb = load_kb(kb_dir)
        except KBError as exc:
            raise PluginError(
                f"knowledge base {kb_dir} is invalid ({len(exc.problems)} problem(s)):\n{exc}"
            ) from None
        downloads = hubgen.rule_pack_downloads(kb)

    tags_plugin = config.plugins.get("material/tags") or config.plugins.get("tags")
    if tags_plugin is not None:
        from material.plugins.tags.structure.tag import Tag

        tags_plugin.config.tags_allowed = {Tag(t) for t in kb.tags}

    hub = hubgen.generate_hub(
        kb, static_pages=_static_pages(Path(config.docs_dir)), downloads=downloads
    )
    config.nav = hub.nav
    _state["hub"] = hub
    _state["kb_dir"] = kb_dir
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    hub: hubgen.Hub = _state["hub"]
    for rel, text in sorted(hub.pages.items()):
        if files.get_file_from_path(rel) is not None:
            raise PluginError(
                f"docs/{rel} clashes with a generated page of the hub; rename or remove it"
            )
        files.append(File.generated(config, rel, content=text))
    for rel, data in sorted(hub.files.items()):
        if files.get_file_from_path(rel) is not None:
            raise PluginError(f"docs/{rel} clashes with a generated file of the hub")
        files.append(File.generated(config, rel, content=data))
    return files


@event_priority(-100)  # last: after every plugin that edits the page's HTML
def on_page_content(html: str, page: Any, config: MkDocsConfig, files: Files) -> str:
    """Generated pages carry entry text, which is untrusted: keep only allow-listed HTML
    (no script, image, iframe, event handler, style, or link that is not http(s) or relative)."""
    from denpex_kb.htmlsafe import sanitise

    hub: hubgen.Hub | None = _state.get("hub")
    if hub is None or page.file.src_uri not in hub.pages:
        return html
    clean, dropped = sanitise(html)
    if dropped:
        log.debug("%s: dropped %s", page.file.src_uri, ", ".join(sorted(set(dropped))))
        _state.setdefault("dropped", {})[page.file.src_uri] = dropped
    return clean


def on_template_context(context: Any, template_name: str, config: MkDocsConfig) -> Any:
    """404.html gets relative asset and nav URLs: MkDocs makes them absolute (`/assets/...`) for
    a server that shows the page at any path, and from file:// those point at the disk's root,
    so the page came out unstyled. The hub is opened from disk first; the page sits at the root
    of the site, so `.` is its base."""
    if template_name != "404.html":
        return context
    from mkdocs import utils

    context["base_url"] = "."
    context["extra_javascript"] = [
        utils.normalize_url(str(s), None, ".") for s in config.extra_javascript
    ]
    context["extra_css"] = [utils.normalize_url(str(s), None, ".") for s in config.extra_css]
    return context
