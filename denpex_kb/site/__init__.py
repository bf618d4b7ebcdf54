"""Generate the docs hub's pages from the knowledge base: plain Markdown plus a nav.

This package knows nothing about MkDocs. `generate_hub(kb)` returns a `Hub`: Markdown pages and
static files keyed by their path inside the docs folder, and a nav in the list-of-mappings shape
that MkDocs (and Zensical) read from `mkdocs.yml`. The MkDocs glue lives in `site_hooks.py`; any
other static-site generator can take `write_hub()`'s output folder instead.

Modules, by responsibility (every public name is importable from `denpex_kb.site` itself):

    markdown.py     entry text made safe Markdown (and the renderer's fixes), code spans,
                    fences, front matter, relative links, entry ids in prose as links
    glance.py       the "fix at a glance" box: a fix's commands and its verify command
    entry.py        one entry's page, sections in a fixed order (ENTRY_SECTIONS)
    indexes.py      home, phases, classes, tags, the catalogue table, the rule-pack page
    jsbundle.py     "Diagnose a log" and the JavaScript engine shipped with it
    build.py        generate_hub, write_hub, rule-pack downloads, build_site (MkDocs)

Layout of the generated part of the hub (paths relative to the docs folder):

    index.md                    home: what the hub is, how to match a log, phases at a glance
    phases/<phase>.md           one index per lifecycle phase, each entry with its summary
    classes.md                  entries grouped by failure class
    tags.md                     the controlled vocabulary and the tags plugin's listing
    catalogue.md                every entry in one sortable table
    rule-pack.md                download of the rule pack and its conformance vectors
    diagnose.md                 paste or drop a log; the rule pack runs in the page
    entries/<id>.md             one page per entry, sections in a fixed order (ENTRY_SECTIONS)
    entries/<id>.yaml           the entry's YAML source, linked from its page
    downloads/...               rule pack files, when the rule-pack exporter provides them

Everything is derived from the entries in a fixed order, so generating twice gives the same bytes.
"""

from __future__ import annotations

from .build import (
    RULE_PACK_FILE,
    VECTORS_FILE,
    Hub,
    SiteBuildError,
    build_site,
    default_config_file,
    generate_hub,
    page_url,
    preloaded,
    rule_pack_downloads,
    write_hub,
)
from .entry import (
    BOOST_COLLATERAL,
    BOOST_ENTRY,
    BOOST_GUIDE,
    BOOST_SEVERITY_STEP,
    ENTRY_SECTIONS,
    MAX_EXAMPLE_LINES,
    MAX_KEY_LINES,
    entry_page,
    example_log_path,
    key_error_lines,
    search_boost,
    versions_label,
)
from .glance import (
    SHELL_COMMANDS,
    fix_at_a_glance,
    is_shell_command,
    step_commands,
)
from .indexes import (
    CATALOGUE_PAGE,
    CLASS_MEANINGS,
    CLASS_TITLES,
    REPORT_FORMAT,
    RULE_PACK_FORMAT,
    SEVERITY_ORDER,
    SORT_SCRIPT,
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
    ENGINE_MODULES,
    ENGINE_SCRIPT,
    JS_ENGINE_DIR,
    RULEPACK_SCRIPT,
    diagnose_page,
    js_engine_bundle,
    js_engine_files,
    rulepack_script,
)
from .markdown import (
    code_span,
    code_spans,
    entry_path,
    fence,
    front_matter,
    html_text,
    indent_block,
    inline,
    link_entry_ids,
    phase_path,
    prose,
    relative,
    yaml_str,
)

__all__ = [
    "prose",
    "inline",
    "html_text",
    "code_span",
    "fence",
    "indent_block",
    "yaml_str",
    "front_matter",
    "relative",
    "entry_path",
    "phase_path",
    "code_spans",
    "link_entry_ids",
    "SHELL_COMMANDS",
    "is_shell_command",
    "step_commands",
    "fix_at_a_glance",
    "ENTRY_SECTIONS",
    "BOOST_ENTRY",
    "BOOST_COLLATERAL",
    "BOOST_GUIDE",
    "BOOST_SEVERITY_STEP",
    "search_boost",
    "MAX_KEY_LINES",
    "MAX_EXAMPLE_LINES",
    "versions_label",
    "key_error_lines",
    "entry_page",
    "example_log_path",
    "CLASS_TITLES",
    "CLASS_MEANINGS",
    "SEVERITY_ORDER",
    "WRITE_AN_ENTRY",
    "RULE_PACK_FORMAT",
    "REPORT_FORMAT",
    "USING_PAGES",
    "home_page",
    "phase_page",
    "classes_page",
    "CATALOGUE_PAGE",
    "SORT_SCRIPT",
    "catalogue_page",
    "tags_page",
    "rule_pack_page",
    "DIAGNOSE_PAGE",
    "JS_ENGINE_DIR",
    "RULEPACK_SCRIPT",
    "ENGINE_SCRIPT",
    "ENGINE_MODULES",
    "js_engine_bundle",
    "rulepack_script",
    "diagnose_page",
    "js_engine_files",
    "Hub",
    "generate_hub",
    "write_hub",
    "RULE_PACK_FILE",
    "VECTORS_FILE",
    "page_url",
    "rule_pack_downloads",
    "SiteBuildError",
    "default_config_file",
    "build_site",
    "preloaded",
]
