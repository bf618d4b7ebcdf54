#!/usr/bin/env bash
# Capture what `pip` prints when it prepares the metadata of a DeepSpeed sdist in a Python
# environment that has no torch (the same as pip's default isolated build environment).
# Usage: scripts/capture/pip_metadata_without_torch.sh PYTHON VERSION OUTPUT.log
#   PYTHON  an interpreter whose environment has pip and setuptools but no torch
#   VERSION a DeepSpeed release, e.g. 0.13.0
# The log keeps pip's output as printed; temporary and environment paths are replaced by
# <pip-tmp>, <sdist>, <env> and <python-lib>. Needs network access to PyPI.
set -u
py=$1; ver=$2; out=$3
if "$py" -c 'import torch' 2>/dev/null; then echo "torch is importable by $py: not the case to capture" >&2; exit 2; fi
work=$(mktemp -d)
# --no-build-isolation: run setup.py with $py's own environment (no torch), pip's metadata step as
# users see it; --no-binary :all: forces the sdist; --no-deps keeps it to DeepSpeed.
"$py" -m pip download "deepspeed==$ver" --no-deps --no-build-isolation --no-binary :all: \
  --disable-pip-version-check -d "$work" >"$work/raw.log" 2>&1
rc=$?
env_prefix=$("$py" -c 'import sys; print(sys.prefix)')
base_lib=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
sed -E -e "s#/tmp/pip-download-[A-Za-z0-9_]+/deepspeed_[0-9a-f]+#<sdist>#g" \
  -e "s#/tmp/pip-download-[A-Za-z0-9_]+#<pip-tmp>#g" \
  -e "s#${env_prefix}#<env>#g" -e "s#${base_lib}#<python-lib>#g" \
  -e "/^(Looking in|WARNING: Location)/d" -e "s#${work}#<download-dir>#g" \
  -e "s#\.?/?tmp/tmp\.[A-Za-z0-9]+#<download-dir>#g" \
  "$work/raw.log" >"$out"
echo "# exit code: $rc (deepspeed==$ver, $("$py" -c 'import sys, importlib.metadata as m; print("python", sys.version.split()[0], "pip", m.version("pip"), "setuptools", m.version("setuptools"))'))" >>"$out"
rm -rf "$work"
exit $rc  # pip's own exit code, so the capture sidecar records it
