"""Where the bundled resources are, in a source checkout and in an installed wheel.

The bundled resources are the knowledge base (`kb/`), what the docs hub is built from
(`mkdocs.yml`, `docs/`, `site_overrides/`, the JavaScript engine in `js/`) and, in a wheel only, a rule pack and a text index
prebuilt from that knowledge base (`prebuilt/`), so that `match` and `search` start without
building anything.

- In a source checkout (an editable install included) they are the checkout's own top-level
  folders: contributors edit `kb/` at the repository root.
- In a wheel, the build (setup.py, `build_py`) copies them into the package as `denpex_kb/_bundle/`,
  laid out like the checkout, and adds `prebuilt/`; they are read from the package folder.

Every other module asks this one; nothing else works out paths from `__file__`. Only the
standard library is imported here: `match` reaches this module before anything heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

BUNDLE_DIR = "_bundle"  # inside the package, in a wheel
PREBUILT_DIR = "prebuilt"
PREBUILT_PACK = "denpex-rules.json"
PREBUILT_INDEX = "index"
PREBUILT_MANIFEST = "manifest.json"


class BundleError(Exception):
    """The bundled resources are missing (a damaged install); the message says what to do."""


@dataclass(frozen=True)
class Bundle:
    """The folder holding the bundled resources, laid out like the source checkout."""

    root: Path
    installed: bool  # True: inside an installed wheel (treat as read-only); False: a checkout

    @property
    def kb_dir(self) -> Path:
        return self.root / "kb"

    @property
    def mkdocs_config(self) -> Path:
        return self.root / "mkdocs.yml"

    @property
    def docs_dir(self) -> Path:
        return self.root / "docs"

    @property
    def js_engine_dir(self) -> Path:
        """The hub's JavaScript engine (ES modules), built into the Diagnose page."""
        return self.root / "js" / "denpex-engine"

    @property
    def prebuilt_dir(self) -> Path:
        return self.root / PREBUILT_DIR

    def prebuilt_manifest(self) -> dict[str, object]:
        """What the wheel build recorded about the prebuilt pack and index ({} when none)."""
        import json  # only a wheel has the manifest: a checkout's `match` needs no json

        try:
            data = json.loads((self.prebuilt_dir / PREBUILT_MANIFEST).read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}


def _package_dir() -> Path | None:
    """The package folder as a real path (a zipped install has none: unsupported). Taken from
    this module's own file rather than importlib.resources, whose import (zipfile and more) is
    a tenth of `match`'s start-up."""
    root = Path(__file__).resolve().parent
    return root if (root / "__init__.py").is_file() else None


def _looks_like_checkout(root: Path) -> bool:
    return (root / "kb" / "tags.yaml").is_file() and (root / "pyproject.toml").is_file()


@cache
def locate() -> Bundle | None:
    """The bundled resources of this installation, or None when it has none."""
    pkg = _package_dir()
    if pkg is None:
        return None
    inside = pkg / BUNDLE_DIR
    if (inside / "kb").is_dir():
        return Bundle(root=inside, installed=True)
    checkout = pkg.resolve().parent
    if _looks_like_checkout(checkout):
        return Bundle(root=checkout, installed=False)
    return None


def bundle() -> Bundle:
    """The bundled resources; BundleError when this installation has none."""
    found = locate()
    if found is None:
        raise BundleError(
            "this installation of denpex-kb has no bundled knowledge base (a damaged or partial "
            "install): reinstall it with `pip install --force-reinstall denpex-kb`, or give "
            "--kb DIR"
        )
    return found


def default_kb_dir() -> Path:
    """The bundled knowledge base folder; BundleError when there is none."""
    return bundle().kb_dir
