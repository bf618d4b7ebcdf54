"""The `denpex-kb` command: a thin layer over the library API.

User errors end in one line on stderr and exit code 2, never a traceback. Heavy modules are
imported inside the commands that need them so `--help` and `match` start fast.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import click

from . import __version__

EXIT_USAGE = 2


class UserError(click.ClickException):
    """A problem the user can fix; printed as one line, exit 2."""

    exit_code = EXIT_USAGE

    def show(self, file=None) -> None:  # noqa: ANN001 - click's signature
        click.echo(f"denpex-kb: error: {self.format_message()}", err=True)


def _kb_option(f):  # noqa: ANN001, ANN202
    return click.option(
        "--kb",
        "kb_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Knowledge base folder (default: the bundled kb/).",
    )(f)


def _load(kb_dir: Path | None):  # noqa: ANN202
    from .kb import KBError, load_kb

    try:
        return load_kb(kb_dir)
    except KBError as exc:
        for p in exc.problems:
            click.echo(str(p), err=True)
        raise UserError(f"knowledge base is invalid ({len(exc.problems)} problem(s))") from None


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="denpex-kb")
def main() -> None:
    """denpex-kb: recognise DeepSpeed training failures, offline.

    Knowledge base of failures, docs hub, rule pack and log matcher. Nothing leaves your machine.
    """


@main.command()
@click.argument("kb_dir", required=False, type=click.Path(path_type=Path))
def validate(kb_dir: Path | None) -> None:
    """Validate every entry of the knowledge base (default: the bundled kb/).

    Prints every problem as FILE:LINE:COL: FIELD: MESSAGE and exits 1 if there are any.
    """
    from .kb import KBError, load_kb

    try:
        kb = load_kb(kb_dir)
    except KBError as exc:
        for p in exc.problems:
            click.echo(str(p), err=True)
        click.echo(f"denpex-kb: {len(exc.problems)} problem(s) found", err=True)
        sys.exit(1)
    n_ex = sum(len(e.examples) for e in kb.entries)
    click.echo(f"ok: {len(kb.entries)} entries, {n_ex} examples, {len(kb.tags)} tags in {kb.root}")


@main.command("list")
@_kb_option
@click.option("--phase", help="Only entries of this lifecycle phase.")
@click.option("--tag", help="Only entries with this tag.")
@click.option("--class", "failure_class", help="Only entries of this failure class.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def list_cmd(
    kb_dir: Path | None, phase: str | None, tag: str | None, failure_class: str | None, fmt: str
) -> None:
    """List entries, optionally filtered by phase, tag or failure class."""
    from .model import FAILURE_CLASSES, PHASES

    kb = _load(kb_dir)
    if phase and phase not in PHASES:
        raise UserError(f"unknown phase {phase!r}; one of: {', '.join(PHASES)}")
    if failure_class and failure_class not in FAILURE_CLASSES:
        raise UserError(f"unknown class {failure_class!r}; one of: {', '.join(FAILURE_CLASSES)}")
    if tag and tag not in kb.tags:
        raise UserError(f"unknown tag {tag!r}; see kb/tags.yaml")
    rows = [
        e
        for e in kb.entries
        if (not phase or e.phase == phase)
        and (not tag or tag in e.tags)
        and (not failure_class or e.failure_class == failure_class)
    ]
    if fmt == "json":
        import json

        data = [
            {
                "id": e.id,
                "title": e.title,
                "phase": e.phase,
                "failure_class": e.failure_class,
                "severity": e.severity,
                "role": e.role,
                "tags": list(e.tags),
                "summary": e.summary,
            }
            for e in rows
        ]
        click.echo(json.dumps(data, indent=2))
        return
    width = max((len(e.id) for e in rows), default=2)
    for e in rows:
        click.echo(f"{e.id:<{width}}  {e.phase:<13}  {e.failure_class:<19}  {e.title}")
    click.echo(f"{len(rows)} of {len(kb.entries)} entries", err=True)


def _wrap(text: str, indent: str = "  ") -> str:
    paras = [p.strip() for p in text.strip().split("\n\n")]
    return "\n\n".join(
        textwrap.fill(
            " ".join(p.split()), width=96, initial_indent=indent, subsequent_indent=indent
        )
        for p in paras
        if p
    )


def render_entry_text(entry) -> str:  # noqa: ANN001 - model.Entry
    """An entry as plain text for a terminal."""
    out: list[str] = []
    add = out.append
    add(f"{entry.title}")
    add(
        f"id: {entry.id}   phase: {entry.phase}   class: {entry.failure_class}   "
        f"severity: {entry.severity}   role: {entry.role}"
    )
    add(f"tags: {', '.join(entry.tags)}")
    for v in entry.affected.versions:
        fixed = f" (fixed in {v.fixed_in})" if v.fixed_in else ""
        add(f"affected: {v.package} {v.specifier}{fixed}")
    add("")
    add(_wrap(entry.summary, ""))
    add("\nWHAT YOU SEE")
    for s in entry.symptoms:
        add(_wrap("- " + s))
    add("\nWHY IT HAPPENS")
    add(_wrap(entry.mechanism))
    for n in entry.not_the_cause:
        add(_wrap(f"Not the cause: {n.claim} {n.why}"))
    add("\nCHECK IT")
    for c in entry.checklist:
        add(_wrap("- " + c.check))
        add(textwrap.indent(c.command.rstrip(), "      $ "))
        add(_wrap(c.shows, "      "))
    add("\nFIX")
    for i, s in enumerate(entry.fix.steps, 1):
        add(_wrap(f"{i}. {s}"))
    for sn in entry.fix.snippets:
        add(f"  {sn.title}:")
        add(textwrap.indent(sn.code.rstrip(), "      "))
    if entry.fix.workaround:
        add(_wrap("Workaround: " + entry.fix.workaround))
    add("\nVERIFY")
    add(textwrap.indent(entry.verify.command.rstrip(), "  $ "))
    add(_wrap(entry.verify.expected))
    if entry.look_alikes:
        add("\nLOOK-ALIKES")
        for la in entry.look_alikes:
            add(_wrap(f"- {la.id}: {la.tell}"))
    add("\nREFERENCES")
    for r in entry.references:
        add(f"  - {r.title}: {r.url}")
    add(f"\nsource: {entry.source_path}")
    return "\n".join(out)


@main.command()
@_kb_option
@click.argument("entry_id")
def show(kb_dir: Path | None, entry_id: str) -> None:
    """Show one entry, readable in a terminal."""
    kb = _load(kb_dir)
    try:
        entry = kb.get(entry_id)
    except KeyError:
        import difflib

        close = difflib.get_close_matches(entry_id, [e.id for e in kb.entries], n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UserError(f"no entry {entry_id!r}{hint}") from None
    click.echo(render_entry_text(entry))


if __name__ == "__main__":  # pragma: no cover
    main()
