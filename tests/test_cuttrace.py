"""A traceback the paste cut before its exception line (engine/cuttrace.py). The logs here are
composed in the shape CPython prints (3.10 without, 3.11+ with `^^^^` markers)."""

from __future__ import annotations

import pytest

from denpex_kb.engine import Engine, load_rulepack
from denpex_kb.engine.cuttrace import TAIL_BYTES, frame_query

CUT = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/root/train.py", line 568, in <module>\n'
    "[rank1]:     main()\n"
    '[rank1]:   File "/opt/conda/lib/python3.11/site-packages/peft/peft_model.py", line 125, in __init__\n'
    "[rank1]:     self.set_additional_trainable_modules(peft_config, adapter_name)\n"
    "[rank1]:     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
)


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(load_rulepack())


def test_a_traceback_cut_before_its_exception_line_is_named(engine: Engine) -> None:
    r = engine.analyse_bytes(CUT.encode())
    cut = r["cut_traceback"]
    assert cut["line"] == 4
    f0, f1 = cut["frames"]
    assert (f0["function"], f0["code"]) == (
        "__init__",
        "self.set_additional_trainable_modules(peft_config, adapter_name)",
    )
    assert (f1["line"], f1["path"], f1["code"]) == (2, "/root/train.py", "main()")
    assert any("is cut before its exception line" in n for n in r["notes"])
    assert frame_query(cut).splitlines()[0].startswith("peft/peft_model.py __init__ ")


@pytest.mark.parametrize(
    "log",
    [
        CUT + "[rank1]: IndexError: index 3 is out of bounds for dimension 0 with size 0\n",
        CUT + "step 3 loss 1.25\nstep 4 loss 1.20\nstep 5 loss 1.18\nstep 6 loss 1.1\nsaved\n",
        # one frame without the header: a frame quoted in prose, not a traceback
        'see   File "/x/y.py", line 3, in f\n',
        "",
    ],
    ids=["ends-with-exception", "traceback-then-more-output", "lone-frame", "empty"],
)
def test_no_cut_traceback(engine: Engine, log: str) -> None:
    assert engine.analyse_bytes(log.encode())["cut_traceback"] is None


def test_only_the_last_bytes_are_read_and_a_last_line_without_newline_counts(
    engine: Engine,
) -> None:
    # The header is 9 KB back: only the frames inside the window are seen (two suffice).
    filler = "".join(f"step {i} loss 1.0\n" for i in range(600))
    body = (
        "Traceback (most recent call last):\n"
        + 'File "a.py", line 1, in f\n    g()\n' * 400
        + 'File "b.py", line 2, in g\n    h()'
    )
    log = (filler + body).encode()
    assert len(body.encode()) > TAIL_BYTES
    r = engine.analyse_bytes(log)
    lines = log.count(b"\n") + 1
    assert [f["line"] for f in r["cut_traceback"]["frames"]] == [lines - 1, lines - 3, lines - 5]
    assert r["cut_traceback"]["frames"][0]["path"] == "b.py"


def test_a_root_cause_means_no_cut_traceback(engine: Engine) -> None:
    log = "ModuleNotFoundError: No module named 'flash_attn'\n" + CUT
    r = engine.analyse_bytes(log.encode())
    assert r["root_cause"]["id"] == "flash-attn-not-installed"
    assert r["cut_traceback"] is None


def test_the_frames_are_looked_up_when_no_error_line_gives_a_lead(
    engine: Engine, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from denpex_kb.engine import suggest_related

    monkeypatch.setenv("DENPEX_KB_CACHE", str(tmp_path / "cache"))
    r = engine.analyse_bytes(CUT.encode())
    assert r["unrecognised_errors"] == []
    suggest_related(r, pack=engine.pack)
    assert r["related"][0]["id"] == "peft-trainable-tokens-zero3-partitioned-embedding"
    r2 = engine.analyse_bytes(CUT.replace("peft/peft_model.py", "mylib/core.py").encode())
    r2["cut_traceback"] = None
    suggest_related(r2, pack=engine.pack)
    assert r2["related"] == []


def test_a_frame_with_an_overlong_path_or_function_is_not_a_frame(engine: Engine) -> None:
    # The bounds cuttrace.js writes into its pattern, checked after the match here.
    long_path = "/x/" + "a" * 1000 + ".py"
    cut = CUT.replace("/opt/conda/lib/python3.11/site-packages/peft/peft_model.py", long_path)
    got = engine.analyse_bytes(cut.encode())["cut_traceback"]
    assert got is not None and [f["path"] for f in got["frames"]] == ["/root/train.py"]
    ok = CUT.replace("/opt/conda/lib/python3.11/site-packages/peft/peft_model.py", long_path[:999])
    assert len(engine.analyse_bytes(ok.encode())["cut_traceback"]["frames"]) == 2
    cut = CUT.replace("in __init__", "in " + "f" * 301)
    got = engine.analyse_bytes(cut.encode())["cut_traceback"]
    assert got is not None and len(got["frames"]) == 1
