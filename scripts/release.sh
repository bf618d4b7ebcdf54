#!/usr/bin/env bash
# Build the artefacts a release attaches, into OUT (default: release/):
#   denpex_kb-<v>-py3-none-any.whl, denpex_kb-<v>.tar.gz   built in isolation, `twine check`ed
#   denpex-rules.json, denpex-rules-vectors.json           the rule pack and its vectors
#   denpex-kb-hub-<v>.tar.gz                                the built docs hub (open index.html)
#   SHA256SUMS
# Usage: bash scripts/release.sh [OUT]   (PYTHON=... picks the interpreter; default .venv's,
# which needs the test extra for `build` and `twine`). CI runs it, then installs the wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-release}"
py="${PYTHON:-.venv/bin/python}"
version=$("$py" -c 'import denpex_kb; print(denpex_kb.__version__)')

rm -rf "$out"
mkdir -p "$out"
"$py" -m build --outdir "$out" . >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
rm "$out/build.log"
"$py" -m twine check --strict "$out"/*.whl "$out"/*.tar.gz

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" -m denpex_kb -q build -o "$work/build" >/dev/null
cp "$work/build/denpex-rules.json" "$work/build/denpex-rules-vectors.json" "$out/"
mv "$work/build/site" "$work/denpex-kb-hub-$version"
tar -C "$work" -czf "$out/denpex-kb-hub-$version.tar.gz" "denpex-kb-hub-$version"
(cd "$out" && sha256sum -- * >SHA256SUMS)
echo "release: $version artefacts in $out/"
ls -l "$out"
