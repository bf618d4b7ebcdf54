"""The installed package is the product: build the wheel and the sdist, check them, install the
wheel (not editable) into a fresh virtual environment and run every command from a folder
outside the checkout.

Needs `build` and `twine` (the test extra) and a package index for the wheel's dependencies
(pip's cache makes later runs quick). DENPEX_KB_DIST=DIR reuses a wheel and sdist already built
there (CI builds them once, with build isolation, and this test checks those same files).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fastfilewriter-rotation-enospc.log"
FIXTURE_KB = ROOT / "tests" / "fixtures" / "kb"


@pytest.fixture(scope="module")
def scratch():  # noqa: ANN201
    """A private temporary folder (pytest's own are pruned by any concurrent pytest run)."""
    where = Path(tempfile.mkdtemp(prefix="denpex-kb-install-"))
    yield where
    shutil.rmtree(where, ignore_errors=True)


pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("build") is None or importlib.util.find_spec("twine") is None,
    reason="needs the test extra's `build` and `twine` (pip install -e '.[test]')",
)


def _clean_env() -> dict[str, str]:
    """This environment without PYTHONPATH and friends: a checkout on the path would make pip
    see denpex-kb as installed already, and the commands import the checkout's code."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 300):
    return subprocess.run(
        cmd,
        cwd=cwd,
        env=env if env is not None else _clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _version() -> str:
    ns: dict[str, str] = {}
    exec((ROOT / "denpex_kb" / "_version.py").read_text(), ns)
    return ns["__version__"]


def _bundled_entry_ids() -> set[str]:
    return {
        p.stem
        for p in (ROOT / "kb").glob("*/*.yaml")
        if p.parent.name != "captured" and not p.parent.name.startswith((".", "_"))
    }


@pytest.fixture(scope="module")
def dists(scratch: Path) -> tuple[Path, Path]:
    given = os.environ.get("DENPEX_KB_DIST")
    if given:
        out = Path(given)
    else:
        out = scratch / "dist"
        # --no-isolation: the test environment already has the build requirements (the
        # project's own dependencies and setuptools); CI checks an isolated build as well.
        proc = _run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
            cwd=ROOT,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheels = sorted(out.glob(f"denpex_kb-{_version()}-*.whl"))
    sdists = sorted(out.glob(f"denpex_kb-{_version()}.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    return wheels[0], sdists[0]


def test_twine_check_passes(dists: tuple[Path, Path]) -> None:
    proc = _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dists)], cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_wheel_carries_the_knowledge_base_and_what_build_needs(dists: tuple[Path, Path]) -> None:
    names = set(zipfile.ZipFile(dists[0]).namelist())
    bundle = "denpex_kb/_bundle/"
    for eid in _bundled_entry_ids():
        assert any(n.startswith(bundle + "kb/") and n.endswith(f"/{eid}.yaml") for n in names), eid
    for needed in (
        "kb/tags.yaml",
        "mkdocs.yml",
        "site_overrides/main.html",
        "docs/rule-pack-format.md",
        "js/denpex-engine/index.js",
        "prebuilt/denpex-rules.json",
        "prebuilt/manifest.json",
        "prebuilt/index/denpex-index.json",
    ):
        assert bundle + needed in names, needed
    assert not any(Path(n).name.endswith(".lock") for n in names)
    licences = {Path(n).name for n in names if "/licenses/" in n}
    assert {"LICENSE", "LICENSE-CONTENT"} <= licences
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(dists[0]).read(meta).decode()
    assert "License-Expression: Apache-2.0 AND CC-BY-4.0" in text
    assert "Requires-Dist: click" in text


def test_sdist_is_complete(dists: tuple[Path, Path]) -> None:
    top = f"denpex_kb-{_version()}/"
    names = {n.removeprefix(top) for n in tarfile.open(dists[1]).getnames()}
    for needed in (
        "LICENSE",
        "LICENSE-CONTENT",
        "README.md",
        "CHANGELOG.md",
        "setup.py",
        "mkdocs.yml",
        "kb/tags.yaml",
        "docs/api.md",
        "site_overrides/main.html",
        "js/denpex-engine/diagnose.js",
        "tests/test_install.py",
        "tests/fixtures/kb/tags.yaml",
        "examples/fastfilewriter-rotation-enospc.log",
    ):
        assert needed in names, needed
    tracked = _run(["git", "ls-files", "kb", "tests", "docs"], cwd=ROOT)
    if tracked.returncode == 0:  # every tracked file of those folders (not in an exported tree)
        missing = [f for f in tracked.stdout.split() if f not in names]
        assert not missing, missing[:10]


@pytest.fixture(scope="module")
def venv(dists: tuple[Path, Path], scratch: Path) -> Path:
    """A fresh virtual environment with the wheel installed (not editable), outside the
    checkout.

    By default its dependencies are the test environment's own (a .pth file puts that
    site-packages last on its path) and `pip check` proves the wheel's declared requirements
    are met there; installing ~30 packages afresh would take minutes. With
    DENPEX_KB_INSTALL_TEST=index they come from the package index, as a user's would.
    `test_every_imported_package_is_a_declared_dependency` checks nothing undeclared is used."""
    where = scratch / "venv"
    t0 = time.monotonic()
    proc = _run([sys.executable, "-m", "venv", "--without-pip", str(where)], cwd=where.parent)
    assert proc.returncode == 0, proc.stderr
    py = where / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(py)]
    if os.environ.get("DENPEX_KB_INSTALL_TEST") == "index":
        proc = _run([*pip, "install", "-q", str(dists[0])], cwd=where.parent, timeout=900)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    else:
        # Installed first, with nothing else on its path (pip must not see the test
        # environment's own denpex-kb); then the test environment's packages are added.
        proc = _run([*pip, "install", "-q", "--no-deps", str(dists[0])], cwd=where.parent)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        code = "import sysconfig; print(sysconfig.get_path('purelib'))"
        target = Path(_run([str(py), "-c", code], cwd=where).stdout.strip())
        ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
        (target / "_test_environment.pth").write_text("\n".join(sorted(ours)) + "\n")
        proc = _run([*pip, "check"], cwd=where.parent)
        ours_broken = [ln for ln in proc.stdout.splitlines() if ln.lower().startswith("denpex-kb")]
        assert not ours_broken, ours_broken
    assert (where / "bin" / "denpex-kb").is_file()
    print(f"venv + install: {time.monotonic() - t0:.1f}s")
    return where


@pytest.fixture()
def user(venv: Path, scratch: Path):  # noqa: ANN201
    """Run the installed `denpex-kb` from a folder outside the checkout, with a fresh cache."""
    tmp_path = Path(tempfile.mkdtemp(prefix="user-", dir=scratch))
    cwd = tmp_path / "work"
    cwd.mkdir()
    assert ROOT not in cwd.resolve().parents
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "DENPEX_KB_CACHE": str(tmp_path / "cache"),
        "LC_ALL": "C.UTF-8",
    }

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(venv / "bin" / "denpex-kb"), *args],
            cwd=cwd,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    run.cwd = cwd  # type: ignore[attr-defined]
    run.env = env  # type: ignore[attr-defined]
    run.cache = tmp_path / "cache"  # type: ignore[attr-defined]
    return run


def test_every_command_works_from_outside_the_checkout(user, venv: Path) -> None:  # noqa: ANN001
    cwd: Path = user.cwd
    assert user("--version").stdout.strip().endswith(_version())

    listed = user("list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert {e["id"] for e in json.loads(listed.stdout)} == _bundled_entry_ids()

    shown = user("show", "fastfilewriter-fd-leak-enospc")
    assert shown.returncode == 0 and "FIX" in shown.stdout, shown.stderr

    found = user("search", "OSError: [Errno 28] No space left on device", "--format", "json")
    assert found.returncode == 0, found.stderr
    assert any(h["id"] == "disk-full-enospc" for h in json.loads(found.stdout))

    log = cwd / "run.log"
    log.write_bytes(EXAMPLE.read_bytes())
    matched = user("match", "run.log", "--format", "json")
    assert matched.returncode == 0, matched.stderr
    report = json.loads(matched.stdout)
    assert report["root_cause"]["id"] == "fastfilewriter-fd-leak-enospc"
    assert report["initiating_rank"] == 0

    # match and search used the wheel's prebuilt pack and index: nothing was built.
    built = sorted(p.name for p in user.cache.rglob("*") if "rulepack" in p.name or p.is_dir())
    assert not any(n.startswith("rulepack-") or n == "index" for n in built), built

    valid = user("validate")
    assert valid.returncode == 0 and valid.stdout.startswith("ok: "), valid.stderr

    exported = user("export-rules", "-o", "pack.json")
    assert exported.returncode == 0, exported.stderr
    assert (
        json.loads((cwd / "pack.json").read_text())["content_hash"]
        == report["rulepack"]["content_hash"]
    )

    # build: the hub needs the bundled mkdocs.yml, docs/ and site_overrides/; a small
    # knowledge base keeps it quick (the bundled one takes the same path, only longer).
    hub = user("build", "--kb", str(FIXTURE_KB), "-o", "out")
    assert hub.returncode == 0, hub.stdout + hub.stderr
    assert (cwd / "out" / "site" / "entries" / "fixture-disk-full.html").is_file()
    assert (cwd / "out" / "site" / "diagnose.html").is_file()  # the JS engine came with the wheel
    assert (cwd / "out" / "denpex-rules.json").is_file()
    assert (cwd / "out" / "index" / "denpex-index.json").is_file()
    assert sorted(p.name for p in cwd.iterdir()) == ["out", "pack.json", "run.log"]

    api = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import denpex_kb, sys; d = denpex_kb.match(sys.argv[1]); "
            "print(denpex_kb.__file__); print(d.root_cause.id)",
            str(log),
        ],
        cwd=cwd,
        env=user.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert api.returncode == 0, api.stderr
    where, top = api.stdout.split()
    assert Path(where).resolve().is_relative_to(venv.resolve()) and top == (
        "fastfilewriter-fd-leak-enospc"
    )
