"""The "fix at a glance" box under an entry's summary: the commands its fix steps give and its
verify command, each as a copyable block, before the rest of the page."""

from __future__ import annotations

import re

from ..model import Entry
from .markdown import code_spans, fence, inline

# Programs a fix step's code span may start with (after `VAR=value` prefixes) to count as a
# command to copy. A span with one word only (`dmesg`, `tmux`) names a tool, not a command.
SHELL_COMMANDS = frozenset(
    """accelerate apt apt-get cat cd chmod chown conda cp dcgmi deepspeed df dmesg dnf docker du
    echo export find for git grep huggingface-cli ibstat kill llamafactory-cli ln ls lsof mamba
    mkdir mkfs.ext4 module mount mv nvidia-smi pip pip3 python python3 rm rsync sacct sbatch
    scontrol sed source srun ss ssh ssh-keygen ssh-keyscan sudo tar test torchrun touch ulimit
    uv unset yum""".split()
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# `not in `docker build``, `instead of `python train.py``: a span the step warns against.
_NEGATED = re.compile(
    r"\b(?:not|never|instead of|rather than|without|avoid|don't|do not)\b[^.;:`(]{0,20}$", re.I
)
# Text right before a command that says which alternative it is ("Debian/Ubuntu:", "On 0.14.3:").
_LEAD_IN = re.compile(r"(?:^|[.;]\s)([A-Za-z][^.;`\[\]()*_<>&{}|]{0,59}:)\s*$")


def is_shell_command(code: str) -> bool:
    """Whether a code span of a fix step is a command to run (not a config key or an API)."""
    code = code.strip()
    if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=\$\(", code):  # MASTER_ADDR=$(scontrol ...)
        return True
    words = code.split()
    while words and _ASSIGNMENT.match(words[0]):
        words.pop(0)
    return len(words) >= 2 and words[0] in SHELL_COMMANDS


def step_commands(step: str) -> list[tuple[str, str]]:
    """The commands a fix step gives, each with its lead-in ("Debian/Ubuntu:") or ""."""
    out: list[tuple[str, str]] = []
    prev_end = 0
    for start, end, body in code_spans(step):
        before = step[:start]
        if is_shell_command(body) and not _NEGATED.search(before):
            m = _LEAD_IN.search(step[prev_end:start])
            out.append((m.group(1).strip() if m else "", body.strip()))
        prev_end = end
    return out


def fix_at_a_glance(entry: Entry) -> str:
    """The box under the summary: what to run (or change) and the command that proves it."""
    b = [
        # A <section>, not a <div>: Material's search indexer ends an exclusion at the first
        # closing tag of the same name, and every code block inside is a <div>.
        '<section class="dx-glance" data-search-exclude markdown>\n',
        '<p class="dx-glance-title" markdown>**Fix at a glance** '
        "([every step explained](#how-to-fix-it))</p>\n",
    ]
    steps = [(i, step_commands(s)) for i, s in enumerate(entry.fix.steps, 1)]
    steps = [(i, cmds) for i, cmds in steps if cmds]
    for i, cmds in steps:
        for lead, cmd in cmds:
            label = f"Step {i}" + (f" · {inline(lead)}" if lead else "")
            b.append(f'<p class="dx-glance-step" markdown>{label}</p>\n')
            b.append(fence(cmd, "bash") + "\n")
    if not steps and entry.fix.snippets:
        for sn in entry.fix.snippets:
            b.append(f'<p class="dx-glance-step" markdown>{inline(sn.title)}</p>\n')
            b.append(fence(sn.code, sn.language) + "\n")
    elif not steps and entry.fix.steps:
        b.append('<p class="dx-glance-step" markdown>Step 1</p>\n')
        b.append(f'<p class="dx-glance-text" markdown>{inline(entry.fix.steps[0])}</p>\n')
    elif entry.fix.snippets:
        n = len(entry.fix.snippets)
        b.append(
            f'<p class="dx-glance-more" markdown>And {n} code or config '
            f"{'change' if n == 1 else 'changes'} under [How to fix it](#how-to-fix-it).</p>\n"
        )
    b.append('<p class="dx-glance-step" markdown>Verify ([what it shows](#verify-the-fix))</p>\n')
    b.append(fence(entry.verify.command, "bash") + "\n")
    b.append("</section>\n")
    return "\n".join(b)


def terminal_commands(entry: Entry) -> str:
    """The `denpex-kb` commands for this entry: does my log show it, and the entry offline."""
    cmds = (
        f"denpex-kb match --entry {entry.id} train.log   # does this log show it? if not, why not\n"
        f"denpex-kb show {entry.id}"
    )
    return (
        '<section class="dx-cli" data-search-exclude markdown>\n'
        '<p class="dx-glance-title" markdown>**From a terminal** '
        "([the CLI](../cli.md))</p>\n\n" + fence(cmds, "bash") + "\n</section>\n"
    )
