"""The `denpex-kb` command: a thin layer over the library API.

User errors end in one line on stderr and exit code 2, never a traceback. Heavy modules are
imported inside the commands that need them so `--help` and `match` start fast.

Conventions shared by every command (docs/cli.md): `--color auto|always|never` with
`FORCE_COLOR` and `NO_COLOR`, `-q/--quiet`, `-v/--verbose`, shell completion through click
(`_DENPEX_KB_COMPLETE`), and a silent exit 0 when stdout is a pipe closed early (`| head`).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import click

from . import __version__

EXIT_USAGE = 2
DEFAULT_BUILD_DIR = "denpex-kb-build"
BUILD_MARKER = ".denpex-kb-build"  # in a folder `build` made: it may replace that folder


class _Opts:
    """The options every command takes (-q, -v, --color), wherever they are given."""

    def __init__(self) -> None:
        self.quiet = False
        self.verbose = 0
        self.color = "auto"


OPTS = _Opts()


def _set_opt(ctx: click.Context, param: click.Parameter, value: object) -> None:
    if value in (None, False, 0):
        return  # not given here; keep what the group-level option said
    if param.name == "verbose":
        OPTS.verbose += int(value)  # type: ignore[call-overload]
    else:
        setattr(OPTS, param.name or "", value)


def _common(f):  # noqa: ANN001, ANN202
    """-q, -v and --color, on the group and on every command."""
    f = click.option(
        "--color",
        type=click.Choice(["auto", "always", "never"]),
        default=None,
        expose_value=False,
        callback=_set_opt,
        help="Colour: auto (default: on a terminal, unless NO_COLOR is set; FORCE_COLOR "
        "forces it), always or never.",
    )(f)
    f = click.option(
        "-v",
        "--verbose",
        count=True,
        expose_value=False,
        callback=_set_opt,
        help="Say more on stderr: which rule pack and index were used, where outputs went.",
    )(f)
    f = click.option(
        "-q",
        "--quiet",
        is_flag=True,
        expose_value=False,
        callback=_set_opt,
        help="Only results and errors: no counts, notes or progress on stderr.",
    )(f)
    return f


def color_enabled(stream=None) -> bool:  # noqa: ANN001
    """Whether to write colour: --color, else FORCE_COLOR, else NO_COLOR, else a terminal."""
    if OPTS.color != "auto":
        return OPTS.color == "always"
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    stream = stream or sys.stdout
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def _note(message: str) -> None:
    """A remark on stderr that --quiet silences (counts, where things were written)."""
    if not OPTS.quiet:
        click.echo(message, err=True)


def _info(message: str) -> None:
    """Detail on stderr only with --verbose."""
    if OPTS.verbose and not OPTS.quiet:
        click.echo(f"denpex-kb: {message}", err=True)


class UserError(click.ClickException):
    """A problem the user can fix; printed as one line, exit 2."""

    exit_code = EXIT_USAGE

    def show(self, file=None) -> None:  # noqa: ANN001 - click's signature
        click.echo(f"denpex-kb: error: {self.format_message()}", err=True)


def _bundled_kb() -> Path:
    from .bundle import BundleError, default_kb_dir

    try:
        return default_kb_dir()
    except BundleError as exc:
        raise UserError(str(exc)) from None


def _kb_dirs(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]):  # noqa: ANN202
    """None (the bundled knowledge base), one folder, or a list of folders layered in order."""
    if not values:
        return None
    roots = [_bundled_kb() if v == "bundled" else Path(v) for v in values]
    return roots[0] if len(roots) == 1 else roots


def _kb_option(f):  # noqa: ANN001, ANN202
    return click.option(
        "--kb",
        "kb_dir",
        multiple=True,
        type=click.Path(file_okay=False),
        callback=_kb_dirs,
        help="Knowledge base folder (default: the bundled one). Repeat to layer folders in "
        "order, e.g. `--kb bundled --kb ~/team-kb` (the word `bundled` names the bundled "
        "knowledge base); ids must be unique across them.",
    )(f)


def _complete_phases(ctx, param, incomplete: str) -> list[str]:  # noqa: ANN001
    from .model import PHASES

    return [p for p in PHASES if p.startswith(incomplete)]


def _complete_classes(ctx, param, incomplete: str) -> list[str]:  # noqa: ANN001
    from .model import FAILURE_CLASSES

    return [c for c in FAILURE_CLASSES if c.startswith(incomplete)]


def _complete_ids(ctx, param, incomplete: str) -> list[str]:  # noqa: ANN001
    """Entry ids for `show <TAB>`, from the rule pack (prebuilt or cached: fast)."""
    from .engine import RulesError, load_rulepack

    kb = ctx.params.get("kb_dir")
    try:
        pack = load_rulepack(None, kb if isinstance(kb, Path | list) else None)
    except (RulesError, OSError):
        return []
    return sorted(e["id"] for e in pack["entries"] if e["id"].startswith(incomplete))


def _problems(problems: list, message: str) -> UserError:
    """Print every problem on stderr (one per line) and return the one-line error to raise."""
    for p in problems:
        click.echo(str(p), err=True)
    return UserError(message)


def _load(kb_dir: Path | None):  # noqa: ANN202
    from .kb import KBError, load_kb

    try:
        return load_kb(kb_dir)
    except KBError as exc:
        n = len(exc.problems)
        raise _problems(exc.problems, f"knowledge base is invalid ({n} problem(s))") from None


def _fail(message: str, code: int = EXIT_USAGE) -> None:
    """One line on stderr, then exit: how every failure ends."""
    message = " ".join(str(message).split())
    try:
        click.echo(f"denpex-kb: error: {message}", err=True)
    except OSError:
        pass
    _silence_stdout()
    sys.exit(code)


def _silence_stdout() -> None:
    """After a failed write to stdout, point it at /dev/null so that the interpreter's own
    flush at exit does not print a second error."""
    import os

    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError):
        pass


EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in denpex-kb, never 1 (which means "no match")


class _PipeClosed(Exception):
    """stdout's reader went away (`| head`); not an OSError, so that click's own handling
    of EPIPE (exit 1) does not take it."""


class _Main(click.Group):
    """The command group, with every way out ending in one line on stderr: usage errors,
    unwritable output (`> /dev/full`, a closed pipe), input the OS refuses, and bugs."""

    def invoke(self, ctx: click.Context):  # noqa: ANN201
        import errno

        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise _PipeClosed() from None
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise _PipeClosed() from None
            raise

    def main(self, args=None, prog_name=None, complete_var=None, **extra):  # noqa: ANN001, ANN201
        import errno
        import os

        code = 0
        OPTS.__init__()  # one invocation's options (tests call main() many times)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            code = rv if isinstance(rv, int) else 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except click.UsageError as exc:
            hint = f" (try '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            _fail(exc.format_message() + hint, exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            _silence_stdout()
            sys.exit(exc.exit_code)
        except click.Abort:
            _fail("interrupted", 130)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except (_PipeClosed, BrokenPipeError):  # `list | head -1`: the reader has what it wanted
            _silence_stdout()
            sys.exit(0)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                _silence_stdout()
                sys.exit(0)
            reason = exc.strerror or os.strerror(exc.errno or errno.EIO) or type(exc).__name__
            if exc.filename:
                _fail(f"{exc.filename}: {reason}", EXIT_USAGE)
            writing = (errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EROFS)
            _fail(("cannot write the output: " if exc.errno in writing else "") + reason)
        except MemoryError:
            _fail("out of memory", EXIT_USAGE)
        except RecursionError:
            _fail("input nested too deeply", EXIT_USAGE)
        except Exception as exc:  # a bug: say so in one line; DENPEX_KB_DEBUG=1 shows it
            if os.environ.get("DENPEX_KB_DEBUG"):
                raise
            _fail(
                f"internal error: {type(exc).__name__}: {exc} "
                "(set DENPEX_KB_DEBUG=1 for the traceback)",
                EXIT_INTERNAL,
            )
        try:
            sys.stdout.flush()
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                _silence_stdout()
                sys.exit(code)
            _fail(f"cannot write the output: {exc.strerror or exc}", EXIT_USAGE)
        sys.exit(code)


@click.group(
    cls=_Main,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="denpex-kb")
@_common
def main() -> None:
    """denpex-kb: recognise DeepSpeed training failures, offline.

    Knowledge base of failures, docs hub, rule pack and log matcher. Nothing leaves your machine.
    """


@main.command()
@_common
@click.argument("kb_dir", nargs=-1, type=click.Path(file_okay=False), callback=_kb_dirs)
def validate(kb_dir: Path | list[Path] | None) -> None:
    """Validate every entry of the knowledge base (default: the bundled one). Several folders
    are validated as one knowledge base, layered in order (`bundled` names the bundled one).

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
    where = " + ".join(kb.layers) if kb.layers else kb.root
    click.echo(f"ok: {len(kb.entries)} entries, {n_ex} examples, {len(kb.tags)} tags in {where}")


@main.command("list")
@_common
@_kb_option
@click.option(
    "--phase", help="Only entries of this lifecycle phase.", shell_complete=_complete_phases
)
@click.option("--tag", help="Only entries with this tag.")
@click.option(
    "--class",
    "failure_class",
    help="Only entries of this failure class.",
    shell_complete=_complete_classes,
)
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
    _note(f"{len(rows)} of {len(kb.entries)} entries")


_LIST_ITEM = re.compile(r"^\s*(?:[-*]|[0-9]+\.)\s+")


def _wrap(text: str, indent: str = "  ") -> str:
    """Re-flow Markdown prose for a terminal, keeping paragraphs and list items apart."""
    import textwrap  # `show` only: not on `match`'s start-up

    paras: list[str] = []
    for para in text.strip().split("\n\n"):
        blocks: list[str] = []
        items: list[list[str]] = []
        for line in para.splitlines():
            if not items or _LIST_ITEM.match(line):
                items.append([line.strip()])
            else:
                items[-1].append(line.strip())
        for item in items:
            first = " ".join(" ".join(item).split())
            if not first:
                continue
            hang = indent + "  " if _LIST_ITEM.match(first) else indent
            blocks.append(
                textwrap.fill(first, width=96, initial_indent=indent, subsequent_indent=hang)
            )
        if blocks:
            paras.append("\n".join(blocks))
    return "\n\n".join(paras)


def render_entry_text(entry) -> str:  # noqa: ANN001 - model.Entry
    """An entry as plain text for a terminal."""
    import textwrap

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
@_common
@_kb_option
@click.argument("entry_id", shell_complete=_complete_ids)
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


@main.command()
@_common
@click.argument("text", required=False)
@_kb_option
@click.option(
    "--index",
    "index_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Use this built index (e.g. dist/index) instead of the per-user cache.",
)
@click.option("--limit", default=5, show_default=True, type=click.IntRange(1, 100))
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def search(
    text: str | None, kb_dir: Path | None, index_dir: Path | None, limit: int, fmt: str
) -> None:
    """Find the entries closest to TEXT: an error line, a traceback, or a whole log (stdin if
    TEXT is omitted or '-'). Exit 1 when nothing matches."""
    from .index import IndexError_, TextIndex, cached_index

    if text is None or text == "-":
        if sys.stdin.isatty():
            raise UserError("give TEXT or pipe a log on stdin")
        text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    if not text.strip():
        raise UserError("nothing to search for")
    try:
        ix = TextIndex(index_dir) if index_dir else cached_index(kb_dir)
    except IndexError_ as exc:
        raise UserError(str(exc)) from None
    except Exception as exc:
        from .kb import KBError  # only here: importing it (JSON Schema, YAML) costs a warm search

        if not isinstance(exc, KBError):
            raise
        n = len(exc.problems)
        raise _problems(exc.problems, f"knowledge base is invalid ({n} problem(s))") from None
    try:
        _info(f"text index {ix.path}")
        hits = ix.search(text, limit=limit)
    finally:
        ix.close()
    if fmt == "json":
        import dataclasses
        import json

        click.echo(json.dumps([dataclasses.asdict(h) for h in hits], indent=2))
    else:
        for rank, h in enumerate(hits, 1):
            click.echo(f"{rank}. {h.id}  ({h.phase}, score {h.score:.2f})")
            click.echo(f"   {h.title}")
            click.echo(f"   matched: {h.snippet}")
        if not hits:
            click.echo("no entry matches", err=True)
    if not hits:
        sys.exit(1)


@main.command("export-rules")
@_common
@_kb_option
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the rule pack (default: ./denpex-rules.json).",
)
@click.option(
    "--vectors",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write every entry example, with its expected verdict, as conformance vectors.",
)
def export_rules(kb_dir: Path | None, output: Path | None, vectors: Path | None) -> None:
    """Export the knowledge base as a portable JSON rule pack (deterministic)."""
    from .rulepack import DEFAULT_OUTPUT, RulePackError, export

    kb = _load(kb_dir)
    output = output or DEFAULT_OUTPUT
    try:
        pack = export(kb, output, vectors)
    except RulePackError as exc:
        raise _problems(exc.problems, "the exported rule pack does not validate") from None
    except OSError as exc:
        raise UserError(f"cannot write {exc.filename}: {exc.strerror}") from None
    click.echo(f"wrote {output} ({len(pack['entries'])} rules, {pack['content_hash']})")
    if vectors:
        click.echo(f"wrote {vectors} (conformance vectors)")


@main.command()
@_common
@_kb_option
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"Folder for everything built (default: ./{DEFAULT_BUILD_DIR}): the rule pack and its "
    "conformance vectors, the text index (index/) and the docs hub (site/). Built aside and "
    "put in place whole; a folder that an earlier build did not make is never overwritten.",
)
@click.option(
    "--site-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Build the hub here instead of OUTPUT/site (each part is then replaced on its own).",
)
@click.option(
    "--dist-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write the rule pack, its vectors and the index here instead of OUTPUT.",
)
def build(
    kb_dir: Path | list[Path] | None,
    output: Path | None,
    site_dir: Path | None,
    dist_dir: Path | None,
) -> None:
    """Build everything from the knowledge base (the bundled one, or --kb folders layered):
    rule pack, conformance vectors, text index and docs hub, into one output folder.

    The hub is the same site `mkdocs build` makes from mkdocs.yml; open OUTPUT/site/index.html
    from disk, it works offline. On any failure the output folder is left as it was.
    """
    import shutil
    import time

    from . import atomic

    t0 = time.perf_counter()
    kb = _load(kb_dir)
    out = output if output is not None else Path(DEFAULT_BUILD_DIR)
    try:
        if site_dir is not None or dist_dir is not None:  # parts, each replaced on its own
            dist = dist_dir if dist_dir is not None else out
            with atomic.lock(dist):  # two builds into the same folder take turns
                outputs = _build(kb, kb_dir, site_dir or out / "site", dist)
            site_path = site_dir or out / "site"
        else:
            _refuse_foreign(out)
            with atomic.lock(_lock_target(out)):
                atomic.remove_stale(out)
                tmp = atomic.make_tmp_dir(out)
                try:
                    outputs = _build(kb, kb_dir, tmp / "site", tmp)
                    for stale in tmp.glob(".*.lock"):
                        stale.unlink()
                    (tmp / BUILD_MARKER).write_text(
                        f"made by denpex-kb {__version__} build; `build` may replace this folder\n"
                    )
                    atomic.replace_dir(tmp, out)
                finally:
                    if tmp.exists():
                        shutil.rmtree(tmp, ignore_errors=True)
            outputs = [(what, out / p.resolve().relative_to(tmp.resolve())) for what, p in outputs]
            site_path = out / "site"
    except OSError as exc:
        where = exc.filename or out
        raise UserError(f"cannot write {where}: {exc.strerror or exc}") from None
    for what, path in outputs:
        click.echo(f"{what:<10} {path}")
    click.echo(
        f"built {len(kb.entries)} entries in {time.perf_counter() - t0:.1f}s; "
        f"open {(site_path / 'index.html').resolve().as_uri()} (works offline)"
    )


def _lock_target(out: Path) -> Path:
    """Two builds into one folder take turns on a lock kept in the per-user cache, so that
    nothing but the output folder appears next to the user's files."""
    import hashlib

    from .index import cache_dir

    key = hashlib.sha256(os.fsencode(str(out.resolve()))).hexdigest()[:24]
    return cache_dir() / "locks" / key


def _refuse_foreign(out: Path) -> None:
    """`build` replaces its output folder whole: never one it did not make."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise UserError(f"{out} exists and is not a folder; give another --output")
    if out.is_dir() and not (out / BUILD_MARKER).is_file() and any(out.iterdir()):
        raise UserError(
            f"{out} is not empty and was not made by `denpex-kb build`; give another --output "
            "or remove it"
        )


def _build(kb, kb_dir, site_dir: Path, dist_dir: Path) -> list[tuple[str, Path]]:  # noqa: ANN001
    from . import site

    outputs: list[tuple[str, Path]] = []

    # Step 1: the rule pack and its conformance vectors (the same bytes the hub offers).
    from .rulepack import RulePackError, write_atomic

    try:
        downloads = site.rule_pack_downloads(kb)
    except RulePackError as exc:
        raise _problems(exc.problems, "the exported rule pack does not validate") from None
    for name, data in sorted(downloads.items()):
        try:
            write_atomic(dist_dir / name, data)
        except OSError as exc:
            raise UserError(f"cannot write {exc.filename}: {exc.strerror}") from None
        outputs.append(("rule pack" if name == site.RULE_PACK_FILE else "vectors", dist_dir / name))

    # Step 2: the full-text index, the same one `search --index DIR/index` reads.
    from .index import build_index

    try:
        outputs.append(("text index", build_index(kb, dist_dir / "index")))
    except OSError as exc:
        raise UserError(f"cannot write the index under {dist_dir}: {exc.strerror}") from None
    _info(f"rule pack, vectors and index written under {dist_dir}")

    # Step 3: the docs hub.
    try:
        site_path = site.build_site(
            kb_dir=kb_dir or Path(kb.root), site_dir=site_dir, kb=kb, downloads=downloads
        )
    except site.SiteBuildError as exc:
        raise UserError(f"hub build failed: {exc}") from None
    outputs.append(("docs hub", site_path / "index.html"))
    return outputs


MAX_STDIN_FOR_RUN = 256 << 20


def _stdin_bytes(sources: list) -> bytes | None:  # noqa: ANN001 - engine.Source
    """stdin read once (bounded), so that --run can diagnose it a second time."""
    if not any(src.path is None for src in sources):
        return None
    data = sys.stdin.buffer.read(MAX_STDIN_FOR_RUN + 1)
    if len(data) > MAX_STDIN_FOR_RUN:
        raise UserError("--run keeps stdin in memory: give a file for inputs over 256 MiB")
    return data


def _progress_streams(sources):  # noqa: ANN001, ANN202
    """Streams that draw a progress line on stderr, or None when there should be none:
    stderr is not a terminal, --quiet, or the input is small."""
    from .engine import open_source
    from .progress import THRESHOLD, LazyStreams, Progress, total_size

    if OPTS.quiet:
        return None
    try:
        if not sys.stderr.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    total = total_size(sources)
    if total is not None and total < THRESHOLD:
        return None
    return LazyStreams(sources, open_source, Progress(total, sys.stderr))


def _diagnose(engine, sources, stdin_data, extra: bytes, kb_dir, pack, jobs: int = 1) -> dict:  # noqa: ANN001
    import io

    from .engine import Source, open_source, suggest_related

    if stdin_data is None and not extra:
        lazy = _progress_streams(sources)
        if lazy is None:
            report = engine.analyse(sources, jobs=jobs)
        else:
            try:
                report = engine.analyse(sources, streams=lazy, jobs=jobs)  # type: ignore[arg-type]
            finally:
                lazy.close()
    else:
        streams = [
            io.BytesIO(stdin_data or b"") if src.path is None else open_source(src)
            for src in sources
        ]
        srcs = list(sources)
        if extra:
            srcs.append(Source("<checks>", None))
            streams.append(io.BytesIO(extra))
        try:
            report = engine.analyse(srcs, streams=streams)
        finally:
            for st in streams:
                st.close()
    try:
        suggest_related(report, kb_dir, pack=pack)
    except Exception as exc:
        # Suggestions are a hint: an unusable cache only costs them. The index module is
        # imported only when a report needs suggestions, so its error class is looked up.
        index = sys.modules.get("denpex_kb.index")
        if not isinstance(exc, OSError) and (
            index is None or not isinstance(exc, index.IndexError_)
        ):
            raise
        report["related"] = []
    return report


def _check_and_rerun(engine, sources, stdin_data, kb_dir, pack, report, run: bool) -> dict:  # noqa: ANN001
    from .confirm import checks, run_checks, transcript

    items = checks(report)
    if not items:
        click.echo("denpex-kb: no read-only check settles this verdict", err=True)
        return report
    for c in items:
        state = "" if c.runnable else "  (fill in the <placeholders>; not run)"
        click.echo(f"check [{c.entry}] $ {c.command}{state}", err=True)
    if not run:
        return report
    results = run_checks(items)
    for r in results:
        click.echo(f"ran $ {r.check.command} (exit {r.returncode})\n{r.output.rstrip()}", err=True)
    again = _diagnose(engine, sources, stdin_data, transcript(results), kb_dir, pack)
    again["checks_run"] = [
        {"entry": r.check.entry, "command": r.check.command, "returncode": r.returncode}
        for r in results
    ]
    return again


def _built_hub_url() -> str | None:
    """file:// URL of a built docs hub to link entries to: $DENPEX_KB_HUB (a folder), else
    the default `build` output in the current folder, else (in a checkout) the checkout's."""
    from .bundle import locate

    candidates = []
    if os.environ.get("DENPEX_KB_HUB"):
        candidates.append(Path(os.environ["DENPEX_KB_HUB"]))
    candidates.append(Path(DEFAULT_BUILD_DIR) / "site")
    found = locate()
    if found is not None and not found.installed:
        candidates += [found.root / DEFAULT_BUILD_DIR / "site", found.root / "site"]
    for site_dir in candidates:
        if (site_dir / "index.html").is_file():
            return site_dir.resolve().as_uri() + "/"
    return None


@main.command("match")
@_common
@click.argument("paths", nargs=-1, type=click.Path())
@_kb_option
@click.option(
    "--rules",
    "rules_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="An exported rule pack (default: the one built from the knowledge base, cached).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
)
@click.option("--no-color", "no_color", is_flag=True, hidden=True, help="Same as --color never.")
@click.option(
    "--check",
    is_flag=True,
    help="List the read-only commands that would settle the verdict (df, lsof, dmesg...).",
)
@click.option(
    "--entry",
    "focus_id",
    metavar="ID",
    default=None,
    help="Say first whether the log shows this entry's failure, and if not, why not (ruled out "
    "by facts, explained by another entry, one of several...). Exit 0 only when it is the root cause.",
)
@click.option(
    "--run",
    "run_checks",
    is_flag=True,
    help="With --check: run those commands here (read-only ones only), then diagnose again "
    "with their output. Never the default.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes scanning a large log file (default: one per core; 1: this process only). "
    "The report is the same whatever the number.",
)
def match_cmd(
    paths: tuple[str, ...],
    kb_dir: Path | None,
    rules_path: Path | None,
    fmt: str,
    no_color: bool,
    check: bool,
    run_checks: bool,
    jobs: int | None,
    focus_id: str | None,
) -> None:
    """Find the failure in a log: files, .gz, folders of per-rank logs, or stdin ('-' or none).

    Prints the root-cause entry with the lines that prove it, the initiating rank, the
    collateral errors, the fix and the command that verifies it. Exit codes: 0 a confident root
    cause, 1 no confident match, 2 usage or input error. With --entry ID: 0 when ID is the
    confident root cause, else 1.
    """
    from .engine import Engine, InputError, RulesError, collect_sources, load_rulepack

    if (not paths or paths == ("-",)) and sys.stdin.isatty():
        raise UserError("give a log file or folder, or pipe a log on stdin")
    if run_checks and not check:
        raise UserError("--run only goes with --check")
    if no_color:
        OPTS.color = "never"
    try:
        sources = collect_sources(list(paths))
        pack = load_rulepack(rules_path, kb_dir)
        _info(f"rule pack {pack['content_hash']} ({len(pack['entries'])} rules)")
        engine = Engine(pack)
        stdin_data = _stdin_bytes(sources) if run_checks else None
        if jobs is None:
            from .engine.split import default_jobs

            jobs = default_jobs()
        titles = {e["id"]: e["title"] for e in pack["entries"]}
        if focus_id is not None and focus_id not in titles:
            raise UserError(f"no entry {focus_id!r} in the rule pack (`denpex-kb list` shows them)")
        report = _diagnose(engine, sources, stdin_data, b"", kb_dir, pack, jobs)
        if check:
            report = _check_and_rerun(engine, sources, stdin_data, kb_dir, pack, report, run_checks)
    except (InputError, RulesError) as exc:
        raise UserError(str(exc)) from None
    from .termsafe import displayable

    if focus_id is not None:
        from .engine.focus import entry_focus

        report["focus"] = entry_focus(report, focus_id, titles[focus_id])
    report = displayable(report)
    code = 0 if report["verdict"] == "confident" else 1
    if focus_id is not None:
        code = 0 if report["focus"]["standing"] == "root-cause" else 1
    if fmt != "json" and not OPTS.quiet:
        from .termsafe import escape_controls

        for w in report.get("warnings", []):
            click.echo(f"denpex-kb: warning: {escape_controls(w)}", err=True)
    if fmt == "json":
        import json

        text, use_color = json.dumps(report, indent=2, ensure_ascii=False) + "\n", False
    else:
        shown = _terminal_safe(report)
        if fmt == "markdown":
            from .engine import render_markdown

            text, use_color = render_markdown(shown), False
        else:
            from .engine import render_text

            use_color = color_enabled(sys.stdout)
            text = render_text(shown, color=use_color, hub=_built_hub_url())
    try:
        click.echo(text, nl=False, color=use_color)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the verdict's exit code still tells the caller
        _silence_stdout()
    sys.exit(code)


@main.command("eval")
@_common
@click.argument("dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--split",
    type=click.Choice(["dev", "holdout", "all"]),
    default="all",
    show_default=True,
    help="Only the cases of this split.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@_kb_option
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Compare with these per-case outcomes; exit 1 if a case that was right is not now.",
)
@click.option("--bless", is_flag=True, help="Rewrite the --baseline file with today's outcomes.")
@click.option(
    "--summary",
    is_flag=True,
    help="Text: the figures only, no case ids (no case list, no confusion), for measuring the "
    "holdout split without seeing what to tune on.",
)
def eval_cmd(
    dirs: tuple[Path, ...],
    split: str,
    fmt: str,
    kb_dir: Path | None,
    baseline: Path | None,
    bless: bool,
    summary: bool,
) -> None:
    """Score the matcher on labelled corpus cases (the .log files under DIRS, see
    tests/corpus/README.md): top-1, top-3, abstain and confident-wrong rates, calibration,
    confusion. Exit codes: 0 done, 1 a regression versus --baseline, 2 usage or corpus error."""
    from . import evaluation as ev
    from .corpus import CorpusError, load_cases
    from .engine import InputError, RulesError

    if summary and fmt != "text":
        raise UserError("--summary is for the text format (JSON always lists the cases)")
    if bless and (baseline is None or split != "all"):
        raise UserError("--bless needs --baseline FILE and the whole corpus (--split all)")
    try:
        cases = [c for c in load_cases(list(dirs)) if split in ("all", c.split)]
    except CorpusError as exc:
        raise _problems(
            exc.problems, f"corpus is invalid ({len(exc.problems)} problem(s))"
        ) from None
    try:
        run = ev.evaluate_cases(cases, kb_dir)
        comparison = None
        if baseline is not None and not bless:
            comparison = ev.compare(run.results, ev.read_baseline(baseline), str(baseline))
    except (InputError, RulesError, ev.BaselineError) as exc:
        raise UserError(str(exc)) from None
    for w in run.warnings:
        click.echo(f"warning: {w}", err=True)
    if fmt == "json":
        import json

        click.echo(json.dumps(ev.to_json(run, comparison), indent=2, ensure_ascii=False))
    else:
        click.echo(ev.render_text(run, comparison, summary), nl=False)
    if bless:
        assert baseline is not None
        try:
            ev.write_baseline(baseline, run.results)
        except OSError as exc:
            raise UserError(f"cannot write {baseline}: {exc.strerror}") from None
        click.echo(f"blessed {len(run.results)} case(s) into {baseline}", err=True)
    if comparison is not None and comparison.regressions:
        sys.exit(1)


@main.command("fleet")
@_common
@click.argument("inputs", nargs=-1)
@click.option(
    "--manifest",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help='JSON Lines of jobs: {"id", "paths" (or "path"), "time", "meta"}.',
)
@click.option(
    "--job-depth",
    type=click.IntRange(min=1),
    default=None,
    help="Every file or folder this many levels below a folder is one job (default: "
    "folders of per-rank files are jobs, other files are jobs each).",
)
@click.option(
    "--include",
    multiple=True,
    help="In walked folders, only files whose name matches this pattern are jobs (repeatable, "
    "e.g. --include '*.log' --include '*.gz').",
)
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("fleet-out"),
    show_default=True,
    help="records.jsonl (appended, re-runs skip done jobs) and report.{md,json,html}.",
)
@click.option(
    "-j",
    "--jobs",
    "workers",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: one per CPU).",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "ray", "serial"]),
    default="local",
    show_default=True,
    help="Process pool here, Ray tasks (pip install 'denpex-kb[ray]'), or one process.",
)
@click.option("--ray-address", default=None, help="Ray cluster address (default: a local Ray).")
@_kb_option
@click.option(
    "--rules",
    "rules_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="An exported rule pack (default: built from the knowledge base).",
)
@click.option(
    "--min-suspect-jobs",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="A host is a suspect node after hardware failures started there in this many jobs.",
)
def fleet_cmd(
    inputs,
    manifest,
    job_depth,
    include,
    out_dir,
    workers,
    engine,
    ray_address,
    kb_dir,
    rules_path,
    min_suspect_jobs,
) -> None:  # noqa: ANN001
    """Diagnose many jobs (folders, globs, a manifest) and write fleet reports: failure mix
    per day/week and phase, suspect nodes, unknown-error clusters, version-only failures."""
    from . import fleet
    from .engine import InputError, RulesError, load_rulepack

    if not inputs and manifest is None:
        raise UserError("give job folders, files or globs, or --manifest FILE")
    if isinstance(kb_dir, list):
        raise UserError("fleet takes one --kb folder (layered knowledge bases: not yet)")
    try:
        pack = load_rulepack(rules_path, kb_dir)
        jobs = fleet.discover(
            list(inputs), manifest, job_depth, fleet.rank_in_name(pack), list(include)
        )
        kb = str(kb_dir) if kb_dir is not None else None
        summary = fleet.run_fleet(
            jobs, out_dir / "records.jsonl", pack, kb, workers, engine, ray_address
        )
        paths = fleet.write_reports(
            out_dir, out_dir / "records.jsonl", pack, min_suspect_jobs, _built_hub_url()
        )
    except (InputError, RulesError, fleet.JobError, RuntimeError) as exc:
        raise UserError(str(exc)) from None
    click.echo(summary.line())
    click.echo(f"report     {paths['html'].resolve().as_uri()} (and report.md, report.json)")


_LOG_DERIVED = frozenset({"text", "file", "host", "files", "notes", "warnings"})


def _terminal_safe(obj, log_derived: bool = False):  # noqa: ANN001, ANN202
    """The report with control characters escaped in what comes from the log or the file
    system (log lines, file and host names, notes and warnings that quote them); the entry's
    own text (fix steps, verify command) keeps its newlines."""
    from .termsafe import escape_controls

    if isinstance(obj, str):
        return escape_controls(obj) if log_derived else obj
    if isinstance(obj, dict):
        return {k: _terminal_safe(v, log_derived or k in _LOG_DERIVED) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_terminal_safe(v, log_derived) for v in obj]
    return obj


if __name__ == "__main__":  # pragma: no cover
    main()
