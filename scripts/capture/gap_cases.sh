#!/usr/bin/env bash
# Capture two real logs for the gap-filling entries (CPU-only machine, no GPU needed).
# usage: VENV=<venv with torch 2.13.0+cpu and deepspeed 0.19.0> OUT=<dir> bash gap_cases.sh
# Each case writes OUT/<case>.log (stdout+stderr) and OUT/<case>.cmd (the command and its rc).
# Paths are sanitised afterwards by hand (venv path -> <venv-ds0.19.0>, this folder -> <scripts>,
# OUT -> <workdir>), as for build_launch_cases.sh.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
PY=$VENV/bin/python
export PATH=$VENV/bin:$PATH
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$OUT/torch_ext}
mkdir -p "$OUT"; cd "$OUT"
run() { local name=$1; shift; echo "\$ $*" > "$name.cmd"; ( "$@" ) > "$name.log" 2>&1; echo "rc=$?" >> "$name.cmd"; }

# 1. --hostfile names a file that does not exist (typo, wrong working directory, per-job name not
#    created yet). The launcher warns and silently runs on the local node only. The script is run
#    from a `bash -x` wrapper, as job scripts often are, so the log shows the flag that was given.
rm -f hostfile_job4242
run launcher-ds-hostfile-not-found bash -xc "deepspeed --hostfile=hostfile_job4242 --master_port 29713 $HERE/launch_init_dist.py"

# 2. "amp" and "zero_optimization" together. The assertion fires in deepspeed.initialize before
#    apex is imported, so apex does not need to be installed to reach it.
run config-amp-and-zero env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29714 \
  $PY "$HERE/cases/amp_zero_case.py"
