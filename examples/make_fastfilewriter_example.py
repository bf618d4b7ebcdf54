"""Write examples/fastfilewriter-rotation-enospc.log (composed; see examples/README.md)."""

from pathlib import Path

OUT = Path(__file__).resolve().parent / "fastfilewriter-rotation-enospc.log"
SITE = "/opt/conda/lib/python3.11/site-packages"
ARGV = "['/opt/conda/bin/python3', '-u', 'train.py', '--local_rank={lr}', '--deepspeed', 'ds_config.json']"


def main() -> None:
    lines: list[str] = []
    for host in ("worker-0", "worker-1"):
        lines += [
            f"{host}: [2026-11-29 02:00:01,100] [INFO] [launch.py:162:main] WORLD INFO DICT: {{'worker-0': [0, 1, 2, 3], 'worker-1': [0, 1, 2, 3]}}",
            f"{host}: [2026-11-29 02:00:01,100] [INFO] [launch.py:180:main] dist_world_size=8",
        ]
    lines.append(
        "worker-0: [2026-11-29 02:00:09,412] [INFO] [logging.py:107:log_dist] [Rank 0] DeepSpeed info: version=0.19.0, git-hash=unknown, git-branch=unknown"
    )
    for r in range(4):
        lines.append(
            f"worker-0: WriterFactory: self._data_parallel_writer=DataParallelWriterConfig(world_size=8, rank={r}, global_rank={r}, local_rank={r}, pure_dp=True) self._show_statistics=False"
        )
    for step in (1000, 2000, 3000):
        lines.append(
            f"worker-0: [2026-11-29 0{step // 1000 + 2}:00:00,000] [INFO] [logging.py:107:log_dist] [Rank 0] Saving model checkpoint: /ckpt/global_step{step}/mp_rank_00_model_states.pt"
        )
    tb = [
        "Traceback (most recent call last):",
        '  File "/workspace/train.py", line 188, in <module>',
        '    engine.save_checkpoint(args.save_dir, tag=f"global_step{step}")',
        f'  File "{SITE}/deepspeed/runtime/engine.py", line 3468, in save_checkpoint',
        "    self._save_checkpoint(save_dir, tag, client_state=client_state, exclude_frozen_parameters=exclude_frozen_parameters)",
        f'  File "{SITE}/deepspeed/io/fast_file_writer.py", line 95, in close',
        "    self._fini()",
        f'  File "{SITE}/deepspeed/io/fast_file_writer.py", line 115, in _fini',
        "    self._force_drain()",
        f'  File "{SITE}/deepspeed/io/fast_file_writer.py", line 154, in _force_drain',
        "    self._unaligned_drain(unaligned_tensor)",
        f'  File "{SITE}/deepspeed/io/fast_file_writer.py", line 162, in _unaligned_drain',
        "    fp.close()",
        "OSError: [Errno 28] No space left on device",
    ]
    lines += [f"worker-0: [rank0]: {t}" for t in tb]
    for r in range(1, 8):
        host = "worker-0" if r < 4 else "worker-1"
        lines.append(
            f"{host}: [rank{r}]:[E1129 04:10:0{r % 10}.90388191{r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=90211, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600020 milliseconds before timing out."
        )
    lines += [
        "worker-0: [2026-11-29 04:10:12,001] [INFO] [launch.py:335:sigkill_handler] Killing subprocess 31001",
        "worker-0: [2026-11-29 04:10:12,040] [ERROR] [launch.py:341:sigkill_handler] "
        + ARGV.format(lr=0)
        + " exits with return code = 1",
        "pdsh@worker-0: worker-0: ssh exited with exit code 1",
    ]
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
