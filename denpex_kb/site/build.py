"""The whole hub: `generate_hub` (every page and file, and the nav), `write_hub` (for other
static-site generators), the rule-pack downloads, and `build_site` (MkDocs, strict, on the
top-level mkdocs.yml)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model import PHASE_TITLES, PHASES, KnowledgeBase
from .entry import MAX_EXAMPLE_LINES, entry_page, example_log_path
from .indexes import (
    CATALOGUE_PAGE,
    REPORT_FORMAT,
    RULE_PACK_FORMAT,
    USING_PAGES,
    WRITE_AN_ENTRY,
    catalogue_page,
    classes_page,
    home_page,
    phase_page,
    rule_pack_page,
    tags_page,
)
from .jsbundle import (
    DIAGNOSE_PAGE,
    JS_ENGINE_DIR,
    RULEPACK_SCRIPT,
    diagnose_page,
    js_engine_files,
    rulepack_script,
)
from .markdown import entry_path, phase_path


@dataclass(frozen=True)
class Hub:
    """The generated part of the hub: Markdown pages, static files, and the nav."""

    pages: dict[str, str]
    files: dict[str, bytes]
    nav: list[Any]
    search_excluded: frozenset[str] = field(default_factory=frozenset)


def generate_hub(
    kb: KnowledgeBase,
    *,
    static_pages: Iterable[str] = (),
    downloads: Mapping[str, bytes] | None = None,
) -> Hub:
    """Generate every page of the hub from `kb`.

    static_pages: docs-relative paths of the hand-written pages that exist (they are placed in
    the nav; links to them are only made when they exist). downloads: rule-pack files keyed by
    their path under `downloads/`, linked from the rule-pack page.
    """
    static = set(static_pages)
    downloads = dict(downloads or {})
    has_format = RULE_PACK_FORMAT in static
    has_rulepack = True  # the rule-pack page always exists; it says when the pack is missing
    pages: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for phase in PHASES:
        pages[phase_path(phase)] = phase_page(kb, phase)
    pages["classes.md"] = classes_page(kb)
    pages["tags.md"] = tags_page(kb)
    pages[CATALOGUE_PAGE] = catalogue_page(kb)
    dl = {f"downloads/{name}": data for name, data in sorted(downloads.items())}
    pages["rule-pack.md"] = rule_pack_page(dl, has_format)
    files.update(dl)
    pack_bytes = downloads.get(RULE_PACK_FILE)
    has_diagnose = pack_bytes is not None and (JS_ENGINE_DIR / "index.js").is_file()
    if has_diagnose:
        pages[DIAGNOSE_PAGE] = diagnose_page()
        files[RULEPACK_SCRIPT] = rulepack_script(pack_bytes)
        files.update(js_engine_files())
    pages["index.md"] = home_page(kb, has_rulepack, has_diagnose)
    base = Path(kb.root).resolve().parent
    for e in kb.entries:
        pages[entry_path(e.id)] = entry_page(e, kb)
        src = base / e.source_path if e.source_path else None
        if src is not None and src.is_file():
            files[f"entries/{e.id}.yaml"] = src.read_bytes()
        else:  # pragma: no cover - entries always come from files
            files[f"entries/{e.id}.yaml"] = b""
        for ex in e.examples:
            if len(ex.log.rstrip("\n").split("\n")) > MAX_EXAMPLE_LINES:
                files[example_log_path(e.id, ex.name)] = ex.log.encode("utf-8")

    nav: list[Any] = [{"Home": "index.md"}]
    if has_diagnose:
        nav.append({"Diagnose a log": DIAGNOSE_PAGE})
    phases_nav: list[Any] = []
    for phase in PHASES:
        children: list[Any] = [phase_path(phase)]
        children.extend(entry_path(e.id) for e in kb.by_phase(phase))
        phases_nav.append({PHASE_TITLES[phase]: children})
    nav.append({"Phases": phases_nav})
    nav.append({"By failure class": "classes.md"})
    nav.append({"By tag": "tags.md"})
    nav.append({"Catalogue": CATALOGUE_PAGE})
    using = [{title: page} for title, page in USING_PAGES if page in static]
    if using:
        nav.append({"Use it": using})
    rp: list[Any] = [{"Download": "rule-pack.md"}]
    if has_format:
        rp.append({"Format": RULE_PACK_FORMAT})
    nav.append({"Rule pack": rp})
    if REPORT_FORMAT in static:
        nav.append({"Match report format": REPORT_FORMAT})
    if WRITE_AN_ENTRY in static:
        nav.append({"Write an entry": WRITE_AN_ENTRY})
    excluded = frozenset(
        [phase_path(p) for p in PHASES] + ["classes.md", "tags.md", CATALOGUE_PAGE]
    )
    return Hub(pages=pages, files=files, nav=nav, search_excluded=excluded)


def write_hub(hub: Hub, out_dir: str | Path) -> list[Path]:
    """Write the generated pages and files under out_dir (for other static-site generators).

    Files whose content is unchanged are not rewritten, so a watcher sees no spurious change.
    """
    out = Path(out_dir)
    written: list[Path] = []
    items: list[tuple[str, bytes]] = [(k, v.encode("utf-8")) for k, v in hub.pages.items()]
    items += list(hub.files.items())
    for rel, data in sorted(items):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_bytes() != data:
            target.write_bytes(data)
        written.append(target)
    return written


# --------------------------------------------------------------------------------------------
# Rule pack for download


RULE_PACK_FILE = "denpex-rules.json"
VECTORS_FILE = "denpex-rules-vectors.json"


def page_url(entry_id: str) -> str:
    """URL of an entry's page relative to the site root (the hub is built without directory
    URLs so that it works from file://). Tools that link into the hub use this."""
    return f"entries/{entry_id}.html"


def rule_pack_downloads(kb: KnowledgeBase) -> dict[str, bytes]:
    """The rule pack and its conformance vectors as {file name: bytes}.

    Built with the same functions as `denpex-kb export-rules`, so the files the hub offers are
    byte-identical to dist/. Returns {} while the exporter is not available.
    """
    try:
        from .. import rulepack
    except ImportError:  # pragma: no cover - the exporter ships with the package
        return {}
    needed = ("build_pack", "validate_pack", "dumps", "build_vectors")
    if not all(hasattr(rulepack, name) for name in needed):  # pragma: no cover
        return {}
    pack = rulepack.build_pack(kb)
    rulepack.validate_pack(pack)
    return {
        RULE_PACK_FILE: rulepack.dumps(pack),
        VECTORS_FILE: rulepack.dumps(rulepack.build_vectors(kb, pack)),
    }


# --------------------------------------------------------------------------------------------
# Running MkDocs on the top-level mkdocs.yml (used by `denpex-kb build`)


class SiteBuildError(Exception):
    """The hub did not build; the message says why (warnings are errors: strict mode)."""


def default_config_file() -> Path:
    """The bundled mkdocs.yml: the checkout's, or the copy inside an installed wheel."""
    from ..bundle import BundleError, bundle

    try:
        return bundle().mkdocs_config
    except BundleError as exc:
        raise SiteBuildError(str(exc)) from None


# A knowledge base the caller already loaded and validated, with its rule-pack downloads, keyed
# by its folders: the MkDocs hook (site_hooks.on_config) takes it instead of loading it again
# (issue 15: the KB is loaded once per build). Set only while build_site runs.
_PRELOADED: dict[tuple[str, ...], tuple[KnowledgeBase, Mapping[str, bytes]]] = {}


def _kb_key(kb_dir: str | Path | list | tuple) -> tuple[str, ...]:
    dirs = kb_dir if isinstance(kb_dir, list | tuple) else [kb_dir]
    return tuple(str(Path(d).resolve()) for d in dirs)


def preloaded(
    kb_dir: str | Path | list | tuple,
) -> tuple[KnowledgeBase, Mapping[str, bytes]] | None:
    """(knowledge base, rule-pack downloads) that the running build_site was given for these
    folders, or None (then the hook loads the KB itself, as under a plain `mkdocs build`)."""
    return _PRELOADED.get(_kb_key(kb_dir))


def build_site(
    kb_dir: str | Path | list[str | Path] | tuple[str | Path, ...] | None = None,
    site_dir: str | Path | None = None,
    config_file: str | Path | None = None,
    kb: KnowledgeBase | None = None,
    downloads: Mapping[str, bytes] | None = None,
) -> Path:
    """Build the hub with MkDocs (strict) exactly as `mkdocs build` would; return the site dir.

    kb_dir overrides `extra.denpex.kb_dir`; site_dir overrides `site_dir` (both default to what
    mkdocs.yml says). Any MkDocs warning fails the build; SiteBuildError carries every message.
    `kb` (loaded from kb_dir) and `downloads` (its `rule_pack_downloads`, made here when not
    given) are used instead of loading and exporting the knowledge base a second time.
    """
    import logging
    import os

    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    bundled = not config_file
    config_file = Path(config_file) if config_file else default_config_file()
    if not config_file.is_file():
        raise SiteBuildError(f"{config_file}: no such file")

    class _Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            msg = record.getMessage().strip()
            if msg and msg not in self.messages:
                self.messages.append(msg)

    logger = logging.getLogger("mkdocs")
    collect = _Collect()
    logger.addHandler(collect)
    overrides: dict[str, Any] = {"strict": True}
    if site_dir is not None:
        overrides["site_dir"] = str(Path(site_dir).resolve())
    if bundled:
        from ..bundle import bundle

        if bundle().installed:
            if site_dir is None:  # mkdocs.yml's `site/` would land inside the installed package
                raise SiteBuildError("give the folder to build the hub in (site_dir)")
            # The hooks file by its place in this package (mkdocs.yml names it from the checkout).
            overrides["hooks"] = [str(Path(__file__).resolve().parent.parent / "site_hooks.py")]
    from .. import atomic

    try:
        cfg = load_config(config_file=str(config_file), **overrides)
        if isinstance(kb_dir, list | tuple):  # several folders, layered (kb.load_kb)
            cfg.extra.setdefault("denpex", {})["kb_dir"] = [str(Path(k).resolve()) for k in kb_dir]
        elif kb_dir is not None:
            cfg.extra.setdefault("denpex", {})["kb_dir"] = str(Path(kb_dir).resolve())
        # Built aside and renamed into place: a killed or failed build leaves the old hub whole,
        # and two builds of the same hub take turns.
        final = Path(cfg["site_dir"])
        if kb is not None:  # the hook finds it under the folders it is told to load
            dl = downloads if downloads is not None else rule_pack_downloads(kb)
            _PRELOADED[_kb_key(kb_dir or kb.root)] = (kb, dl)
        with atomic.lock(final):
            atomic.remove_stale(final)
            tmp = atomic.make_tmp_dir(final)
            try:
                cfg["site_dir"] = str(tmp)
                cfg.plugins.on_startup(command="build", dirty=False)
                try:
                    build(cfg)
                finally:
                    cfg.plugins.on_shutdown()
                atomic.replace_dir(tmp, final)
            finally:
                if tmp.exists():
                    import shutil

                    shutil.rmtree(tmp, ignore_errors=True)
    except MkDocsException as exc:
        detail = "\n".join(collect.messages) or str(exc) or "the hub build failed"
        raise SiteBuildError(detail) from None
    finally:
        logger.removeHandler(collect)
        _PRELOADED.clear()
    return final
