"""Take the hub screenshots shown in docs/hub-tour.md: the Diagnose page with a pasted log and an
entry page, each on a desktop and a phone viewport, from a freshly built hub opened from file://
in the same headless Chromium the browser tests use (offline: any request off file: fails).

    .venv/bin/python scripts/screenshots.py              # build the hub, rewrite docs/images/hub-*.png
    .venv/bin/python scripts/screenshots.py --site DIR   # use a hub already built in DIR

The pasted log is composed from real message formats (the seed case: Errno 28 while `df` shows
the checkpoint mount 35% used), so the pictures show a differential, not a guess.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images"
ENTRY = "fastfilewriter-fd-leak-enospc"
VIEWPORTS = {"desktop": (1280, 860, 1), "phone": (390, 844, 2)}
# Composed: the traceback tail and OSError as Python prints them, GNU df's table layout.
SEED_LOG = """[rank0]: Traceback (most recent call last):
[rank0]:   File "train.py", line 88, in <module>
[rank0]:     engine.save_checkpoint(args.out)
[rank0]: OSError: [Errno 28] No space left on device: '/ckpt/run1/global_step400/mp_rank_00_model_states.pt'
$ df -h /ckpt
Filesystem      Size  Used Avail Use% Mounted on
/dev/nvme1n1    1.8T  630G  1.1T  35% /ckpt
"""


def _build(site_dir: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from denpex_kb import site

    return site.build_site(kb_dir=ROOT / "kb", site_dir=site_dir)


def _shoot(site_dir: Path) -> list[Path]:
    from urllib.parse import quote

    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("DENPEX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    OUT.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        for name, (w, h, scale) in VIEWPORTS.items():
            ctx = browser.new_context(
                viewport={"width": w, "height": h}, device_scale_factor=scale, color_scheme="light"
            )
            ctx.route(
                "**/*",
                lambda r: (
                    r.continue_()
                    if r.request.url.startswith(("file:", "data:", "blob:"))
                    else r.abort()
                ),
            )
            page = ctx.new_page()
            page.goto((site_dir / "diagnose.html").as_uri() + "#dx-text=" + quote(SEED_LOG))
            page.wait_for_function(
                "() => document.querySelector('#dx-diagnose').dataset.state === 'done'",
                timeout=60_000,
            )
            # The verdict at the top of the picture, the paste box just above it.
            page.evaluate("document.querySelector('#dx-result').scrollIntoView({block: 'start'})")
            page.evaluate("window.scrollBy(0, -60)")
            page.add_style_tag(content=".md-top { display: none !important; }")  # "Back to top"
            written.append(_save(page, f"hub-diagnose-{name}.png"))
            page.goto((site_dir / "entries" / f"{ENTRY}.html").as_uri())
            written.append(_save(page, f"hub-entry-{name}.png"))
            ctx.close()
        browser.close()
    return written


def _save(page, name: str) -> Path:  # noqa: ANN001
    final = OUT / name
    tmp = final.with_suffix(".tmp.png")
    page.screenshot(path=str(tmp))
    tmp.replace(final)  # atomic: a failed run leaves the previous picture
    return final


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", type=Path, help="a built hub (default: build one in a temp folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        site_dir = args.site or _build(Path(tmp) / "site")
        for p in _shoot(site_dir):
            print(f"wrote {p.relative_to(ROOT)} ({p.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
