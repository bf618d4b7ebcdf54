"""Every captured log can be regenerated: it has a case in scripts/capture/catalog.py and a
metadata sidecar saying how it was produced. (The cases themselves need DeepSpeed venvs and
run outside CI; see scripts/capture/README.md.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPTURED = ROOT / "kb" / "captured"
HEALTHY = ROOT / "tests" / "logs" / "healthy"


def _cases() -> set[str]:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "capture" / "capture.py"), "--list"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}


def test_every_captured_log_has_a_case_and_a_sidecar() -> None:
    cases = _cases()
    logs = sorted(CAPTURED.glob("*.log")) + sorted(HEALTHY.glob("*.log"))
    assert len(logs) > 100
    missing_case = [p.name for p in logs if p.stem not in cases]
    missing_meta = [p.name for p in logs if not p.with_suffix(".meta.json").is_file()]
    assert not missing_case, f"no capture case regenerates: {missing_case}"
    assert not missing_meta, f"no .meta.json sidecar: {missing_meta}"
