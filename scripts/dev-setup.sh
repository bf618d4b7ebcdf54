#!/usr/bin/env bash
# Set up a fresh Debian/Ubuntu machine for denpex-kb development and tests:
# system packages (Chromium for the offline-hub browser test, Node.js for the rule pack's
# JavaScript regex check) and a virtual environment .venv with the project and its test extra.
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "dev-setup: installing system packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q -e '.[test,ray]'
echo "dev-setup: ready (.venv)"
