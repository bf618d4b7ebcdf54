#!/usr/bin/env bash
# Capture config/init/zero-phase misuse failures on a CPU-only machine (single process, gloo).
# usage: VENV=<venv with torch 2.13.0+cpu, deepspeed 0.19.0, transformers 5.24.0, accelerate 1.15.0> OUT=<dir> bash build_init_zero_cases.sh
# Writes OUT/<log-name>.log with paths sanitised: venv -> <venv-ds0.19.0>, base python -> <python>, cases/ -> <scripts>, OUT -> <workdir>.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
PYBASE=$("$VENV/bin/python" -c 'import sys; print(sys.base_prefix)')
export RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$OUT/torch_ext} WORKDIR=$OUT
mkdir -p "$OUT"; cd "$OUT"
port=29700
run() {  # run <log-name> <case>
  port=$((port + 1))
  MASTER_PORT=$port "$VENV/bin/python" "$HERE/cases/init_zero_case.py" "$2" > "$1.raw" 2>&1
  echo "$1: rc=$?"
  sed -e "s#$VENV#<venv-ds0.19.0>#g" -e "s#$PYBASE#<python>#g" -e "s#$HERE/cases#<scripts>#g" -e "s#$OUT#<workdir>#g" "$1.raw" > "$1.log"
  rm -f "$1.raw"
}
run config-gas-derived-zero gas_derived_zero
run config-hf-auto-values-direct hf_auto_values_direct
run init-zero3-load-state-dict-partitioned zero3_load_state_dict_partitioned
run init-zero3-forward-before-engine zero3_forward_before_engine
run zero-zero3-state-dict-saved-empty zero3_state_dict_saved_empty
run zero-zero2-reentrant-shared-param zero2_reentrant_shared_param
run init-hf-trainer-config-mismatch hf_trainer_config_mismatch
run init-hf-config-trailing-comma hf_config_trailing_comma
