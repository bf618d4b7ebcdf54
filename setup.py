"""Wheel build hook: the wheel carries the knowledge base and what the hub is built from.

Everything else about the package is in pyproject.toml. `build_py` copies the top-level kb/,
docs/, site_overrides/, js/ and mkdocs.yml into the package as denpex_kb/_bundle/ (kb/ stays at the
repository root for contributors) and prebuilds the rule pack and text index there, so that an
installed `denpex-kb match` or `search` starts without building anything. An editable install
reads the checkout itself and gets no copy (denpex_kb/bundle.py finds either).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
BUNDLED = ("kb", "docs", "site_overrides", "mkdocs.yml", "js")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")


class BuildPyWithBundle(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        lib = Path(self.build_lib)
        dest = lib / "denpex_kb" / "_bundle"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for name in BUNDLED:
            src = HERE / name
            if src.is_dir():
                shutil.copytree(src, dest / name, ignore=SKIP)
            elif src.is_file():
                shutil.copy2(src, dest / name)
            else:
                raise SystemExit(f"setup.py: {src} is missing; the wheel needs it")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(lib), *sys.path]))
        subprocess.run(
            [sys.executable, "-m", "denpex_kb._prebuild", str(dest)], check=True, env=env
        )


setup(cmdclass={"build_py": BuildPyWithBundle})
