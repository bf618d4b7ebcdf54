#!/usr/bin/env python3
"""Relabel corpus cases whose proposed id is now covered by an entry of another name:
`scripts/corpus/relabel.py OLD=NEW ...` from the repository root. Only the header's expect and
covered lines change; the mapping is decided from the failure the proposal describes
(tests/corpus/PROPOSED-*.md), never from a holdout log."""

import glob
import re
import sys

MAP = dict(a.split("=") for a in sys.argv[1:])
for f in glob.glob("tests/corpus/*/*.log"):
    s = open(f, encoding="utf-8", errors="surrogateescape").read()
    m = re.search(r"^#corpus expect: (\S+)$", s, re.M)
    if m and m.group(1) in MAP:
        s = s.replace(m.group(0), f"#corpus expect: {MAP[m.group(1)]}", 1)
        s = re.sub(r"^#corpus covered: no$", "#corpus covered: yes", s, count=1, flags=re.M)
        open(f, "w", encoding="utf-8", errors="surrogateescape").write(s)
        print("relabelled", f)
