#!/usr/bin/env bash
# Capture real launcher / rendezvous failures on a CPU-only machine.
# usage: VENV=<venv with torch 2.13.0+cpu and deepspeed 0.19.0> OUT=<dir> bash build_launch_cases.sh
# Each case writes OUT/<case>.log (stdout+stderr). Paths are sanitised afterwards by hand
# (venv path -> <venv-ds0.19.0>, this folder -> <scripts>).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
PY=$VENV/bin/python
DS=$VENV/bin/deepspeed
export PATH=$VENV/bin:$PATH
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$OUT/torch_ext}
mkdir -p "$OUT"; cd "$OUT"
run() { local name=$1; shift; echo "\$ $*" > "$name.cmd"; ( "$@" ) > "$name.log" 2>&1; echo "rc=$?" >> "$name.cmd"; }

# 1. script with strict argparse under the deepspeed launcher (--local_rank=N appended)
run launcher-ds-unrecognized-local-rank $DS --num_gpus 2 --master_port 29611 "$HERE/launch_argparse_strict.py" --epochs 1

# 2. malformed hostfile (no slots=)
printf 'worker-0 slots=2\nworker-1 2\n' > hostfile-bad
run launcher-ds-hostfile-bad-entry $DS --hostfile hostfile-bad "$HERE/launch_argparse_strict.py"

# 3. hostfile naming a host that ssh cannot reach
printf 'worker-unreachable-0 slots=2\nworker-unreachable-1 slots=2\n' > hostfile-unreachable
run launcher-ds-hostfile-ssh-unreachable $DS --hostfile hostfile-unreachable "$HERE/launch_argparse_strict.py"

# 4. multi-node hostfile, ssh check skipped, pdsh not installed
run launcher-ds-pdsh-not-installed $DS --hostfile hostfile-unreachable --no_ssh_check --master_addr 10.0.0.1 "$HERE/launch_argparse_strict.py"

# 5. CUDA accelerator forced on a node where torch sees no GPU
run launcher-ds-no-gpu-resources env DS_ACCELERATOR=cuda $DS "$HERE/launch_argparse_strict.py"

# 6. master port already bound by another process
$PY -c "import socket,time; s=socket.socket(); s.bind(('0.0.0.0', 29633)); s.listen(); time.sleep(900)" &
HOLD=$!; sleep 1
run launcher-ds-master-port-in-use $DS --num_gpus 2 --master_port 29633 "$HERE/launch_init_dist.py"
run launcher-torchrun-master-port-in-use $VENV/bin/torchrun --nproc_per_node 2 --master_port 29633 "$HERE/launch_init_dist.py"
kill $HOLD  # the holder outlives both runs (the first run may JIT-build deepspeed_shm_comm)

# 7. a rank that cannot reach MASTER_ADDR:MASTER_PORT (nobody listening) -> TCPStore connect timeout
run rendezvous-tcpstore-connect-timeout env RANK=1 LOCAL_RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29655 DIST_TIMEOUT=10 $PY "$HERE/launch_init_dist.py"

# 8. torchrun with a strict argparse script is fine (env only); torch.distributed.launch passes --local-rank
run launcher-torch-distributed-launch-unrecognized-local-rank $PY -m torch.distributed.launch --nproc_per_node 2 --master_port 29677 "$HERE/launch_argparse_strict.py"
