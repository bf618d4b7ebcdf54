"""Memory is bounded by design: a log where every line is a hit keeps a fixed number of hits
per rank and signal (the rest are counted), and the diagnosis is the same as for a short log.
Composed from the NCCL watchdog message format quoted in kb/communication/nccl-watchdog-timeout."""

from __future__ import annotations

from denpex_kb.engine import MAX_HITS_PER_SIGNAL, Engine, load_rulepack

LINE = (
    "[rank{r}]:[E1201 10:41:12.123456 1234 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum={n}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600087 milliseconds before timing out.\n"
)


def _log(n: int) -> bytes:
    return "".join(LINE.format(r=1 + i % 3, n=i) for i in range(n)).encode()


def test_hit_dense_log_keeps_a_bounded_number_of_hits() -> None:
    engine = Engine(load_rulepack())
    dense = engine.analyse_bytes(_log(6000))
    ranks, signals = 3, 1
    assert dense["hits_beyond_cap"] == 6000 - ranks * signals * MAX_HITS_PER_SIGNAL
    short = engine.analyse_bytes(_log(30))
    assert short["hits_beyond_cap"] == 0
    assert dense["verdict"] == short["verdict"]
    assert [c["id"] for c in dense["collateral"]] == [c["id"] for c in short["collateral"]]
    assert dense["initiating_rank"] == short["initiating_rank"] == 0
