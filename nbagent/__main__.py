"""The ``nbagent`` command (also ``python -m nbagent``): ``demo`` and ``quickstart``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Each command imports what it uses when it runs: ``--version`` and ``--help`` load no provider,
# DataFrame, IPython or Jupyter module (tests/test_cli_imports.py).
if TYPE_CHECKING:
    from nbagent.log import events as ev
    from nbagent.store.base import SessionRow
    from nbagent.store.location import StoreLocation

TUTORIAL = "quickstart.ipynb"


def _tutorial_source() -> Path:
    """The quickstart shipped with nbagent: ``notebooks/`` of a checkout, or a copy inside the package."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "notebooks" / TUTORIAL, here / "notebooks" / TUTORIAL):
        if candidate.exists():
            return candidate
    raise SystemExit(f"nbagent: cannot find {TUTORIAL} next to the package ({here})")


def _event_line(record: ev.TypedEvent) -> str:
    """A few words on one event of the demo's log."""
    from nbagent.log import events as ev
    from nbagent.views.labels import describe_message

    match record:
        case ev.Splice(is_claim=True):
            return f"{record.target}: claimed {record.removed_count}"
        case ev.Splice(is_cancel=True):
            return f"{record.target}: canceled {record.removed_count}" + (
                " (replaced)" if record.inserted else ""
            )
        case ev.Splice():
            return f"{record.target}: +{[m.kind for m in record.inserted]}"
        case ev.UserMessageEvent():
            return f"[{record.source.get('kind')}] {describe_message(record.message).first_line}"
        case ev.TurnEnd():
            return f"{record.turn} {record.kind}"
        case ev.TurnStart() | ev.StepStart() | ev.StepEnd():
            return ".".join(str(x) for x in (record.turn, getattr(record, "step", None)) if x is not None)
        case ev.AssistantChunk() | ev.AssistantMessageEvent() | ev.ToolCallEvent() | ev.ToolResultEvent():
            return f"{record.turn}.{record.step}"
    return ""


async def _demo(folder: Path) -> None:
    import nbagent
    from nbagent.context import cell_text
    from nbagent.log import events as ev
    from nbagent.views import transcript

    path = folder / "demo.nbagent.sqlite"
    agent = nbagent.open_session(path, model="echo")
    print(
        f"session {agent.session_id[:8]} in a temporary file, deleted when the demo ends "
        f"(`{_prog()} quickstart` keeps its session beside the notebook)\n"
    )
    agent.inject(cell_text("Prices are in EUR.", label="units"))
    print(
        f"injected context; status {agent.status!r}, {len(agent.inbox.next_step)} message pending, no model call\n"
    )
    run = await agent.run("Which region sold the most?")
    turns = ", ".join(str(t) for t in run.turns)
    print(
        f"the followup ran as turn{'s' if len(run.turns) != 1 else ''} {turns} ({run.outcome}); the answer:"
    )
    print(f"{run.text}\n")
    print("the log, event by event:")
    for event in agent.events:
        print(f"  {event.seq:3} {event.type:20} {_event_line(ev.parse_event(event))}")
    # Plain text for the terminal: the transcript's Markdown without escapes (`1\.`) or hard breaks.
    print("\n" + terminal_text(transcript(agent.events, title="Transcript", escape=False), unescape=False))
    await agent.close()


def terminal_text(markdown: str, *, unescape: bool = True) -> str:
    """Markdown as a terminal shows it: no trailing hard-break backslashes and (``unescape``) no
    backslash escapes such as ``1\\.``."""
    import re

    text = re.sub(r"\\\n", "\n", markdown)
    return re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>~])", r"\1", text) if unescape else text


def demo() -> int:
    """Open a session with the echo model in a temporary folder, inject, follow up, print the log."""
    import asyncio
    import tempfile

    with tempfile.TemporaryDirectory(prefix="nbagent-demo-") as folder:
        asyncio.run(_demo(Path(folder)))
    return 0


def quickstart(headless: bool | None) -> int:
    """Copy the quickstart into the working directory (if missing) and open it, or run it headless."""
    import shutil
    import subprocess

    if headless is None:
        headless = bool(os.environ.get("CI")) or (
            sys.platform.startswith("linux")
            and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
        )
    if headless:
        for module in ("ipykernel", "nbclient", "nbformat"):
            _require(module, "notebook", "running the quickstart headless")
    else:
        _require("jupyterlab", "all", "opening the quickstart in JupyterLab")
    target = Path.cwd() / TUTORIAL
    if not target.exists():
        shutil.copy(_tutorial_source(), target)
        print(f"nbagent: copied {TUTORIAL} into {target.parent}")
    if not headless:
        print(f"nbagent: opening {TUTORIAL} in JupyterLab (Ctrl+C here stops the server)", flush=True)
        return subprocess.call([sys.executable, "-m", "jupyterlab", str(target)])
    from nbagent.notebook.kernel.headless import RESTART_TAG, output_text, run_notebook

    def show(cell: Any) -> None:
        if RESTART_TAG in cell.get("metadata", {}).get("tags", []):
            print("── the kernel was restarted here (Kernel → Restart) ──\n", flush=True)
        if cell.cell_type == "markdown":
            print(terminal_text(cell.source), end="\n\n", flush=True)
            return
        print(f"In [{cell.get('execution_count') or ' '}]: {cell.source}")
        shown = output_text(cell).rstrip()
        if shown:
            print(shown)
        print(flush=True)

    print(f"nbagent: running {TUTORIAL} in a kernel, cell by cell, with the offline echo model\n", flush=True)
    run_notebook(target, on_cell=show)  # each cell is printed as soon as it has run
    log = f"{target.with_suffix('').name}.nbagent.sqlite"
    print(
        f"nbagent: executed {target} (outputs saved in it); the session log is {log}, which keeps each "
        f"run's session (`{_prog()} sessions list {log}`)"
    )
    return 0


def sessions_command(args: argparse.Namespace) -> int:
    """``nbagent sessions list STORE [--notebook GLOB] [--user NAME | --all-users]``, ``copy SRC DST
    [--session ID]`` and ``prune STORE --older-than DAYS [--attribution] [--dry-run]``."""
    from nbagent.errors import NbagentError
    from nbagent.views.text import plural

    try:
        if args.action == "prune":
            return prune_command(args)
        if args.action == "list":
            return users_command(args) if args.user is not None or args.all_users else list_command(args)
        from nbagent.store.copying import copy_sessions

        results = copy_sessions(args.source, args.destination, session_id=args.session)
    except NbagentError as exc:
        store = args.store if args.action in ("list", "prune") else args.source
        print(f"nbagent sessions {args.action}: {command_words(str(exc), str(store))}", file=sys.stderr)
        return 1
    if not results:
        print("nbagent: the source holds no session; nothing to copy")
    for r in results:
        print(f"{r.session_id}  {r.outcome:<10}  {r.appended} of {plural(r.events, 'event')} written")
    return 0


def list_command(args: argparse.Namespace) -> int:
    """``nbagent sessions list STORE [--notebook GLOB]``: the store's sessions, most recent first."""
    from fnmatch import fnmatchcase

    from nbagent import list_sessions
    from nbagent.store.location import SqliteLocation

    if isinstance(args.store, SqliteLocation) and not os.path.lexists(args.store.path):
        print(
            f"nbagent sessions list: there is no file {args.store.path}; a notebook's session file "
            "is <notebook>.nbagent.sqlite beside it",
            file=sys.stderr,
        )
        return 1
    rows = list_sessions(args.store)
    if args.notebook:
        rows = [r for r in rows if r.notebook and fnmatchcase(r.notebook, args.notebook)]
    for row in rows:
        _print_session(row)
    if not rows:
        print(f"nbagent: no sessions in {args.store}")
    return 0


def _print_session(row: SessionRow, *, lead: str = "", tail: str = "") -> None:
    """A session's two lines of ``nbagent sessions list``: id, figures, model and title, then its
    notebook and run (``lead`` in front of the first line, as wide a gap before the second)."""
    from nbagent.notebook.kernel.runs import how_run
    from nbagent.views.text import plural

    title = f"  {row.title}" if row.title else ""
    counts = f"{plural(row.events, 'event'):>14}  {plural(row.turns, 'turn'):>10}"
    print(f"{lead}{row.id}  {counts}  model {row.model}{title}")
    notebook = f"notebook {Path(row.notebook).name}" if row.notebook else "no notebook recorded"
    print(f"{' ' * len(lead)}    {notebook} · run: {how_run(row.metadata)}{tail}")


def users_command(args: argparse.Namespace) -> int:
    """``nbagent sessions list URL --user NAME`` (the sessions of NAME's schemas) or ``--all-users``
    (of every nbagent schema of the database, with a user column), most recent first."""
    from fnmatch import fnmatchcase

    from nbagent.errors import NbagentError
    from nbagent.store.location import PostgresLocation
    from nbagent.store.postgres.schemas import schema_sessions, user_schemas

    option = "--all-users" if args.all_users else "--user"
    if not isinstance(args.store, PostgresLocation):
        print(
            f"nbagent sessions list: {option} lists the schemas of a postgresql:// URL; a session file is "
            "one notebook's (list it without the option)",
            file=sys.stderr,
        )
        return 1
    schemas = user_schemas(args.store)
    if args.user is not None:
        mine = [s for s in schemas if args.user in s.users]
        if not mine:
            users = sorted({u for s in schemas for u in s.users})
            print(
                f"nbagent sessions list: no nbagent schema of {args.store} belongs to {args.user!r} (no role "
                f"setting nbagent.schema names one, and it owns none); users with sessions: "
                f"{', '.join(users) or 'none'}",
                file=sys.stderr,
            )
            return 1
        schemas = mine
    rows: list[tuple[str, str, Any]] = []
    failed = 0
    for schema in schemas:
        try:
            found = schema_sessions(schema)
        except NbagentError as exc:
            print(f"nbagent sessions list: schema {schema.schema}: {exc}", file=sys.stderr)
            failed += 1
            continue
        user = ",".join(schema.users)
        rows += [(user, schema.schema, r) for r in found]
    if args.notebook:
        rows = [t for t in rows if t[2].notebook and fnmatchcase(t[2].notebook, args.notebook)]
    rows.sort(key=lambda t: t[2].last_time or t[2].created_at or 0, reverse=True)
    width = max((len(u) for u, _, _ in rows), default=4)
    if args.all_users and rows:
        print(f"{'user':<{width}}  session")
    for user, schema_name, row in rows:
        _print_session(
            row, lead=f"{user:<{width}}  " if args.all_users else "", tail=f" · schema {schema_name}"
        )
    if not rows:
        whose = f"of {args.user} " if args.user is not None else ""
        print(f"nbagent: no sessions {whose}in {args.store}")
    return 1 if failed else 0


def prune_command(args: argparse.Namespace) -> int:
    """``nbagent sessions prune``: delete old forks (or only attribution runs), children first."""
    from nbagent.store.pruning import prune_sessions
    from nbagent.views.text import plural

    results = prune_sessions(
        args.store, older_than_days=args.older_than, attribution_only=args.attribution, dry_run=args.dry_run
    )
    for r in results:
        print(
            f"{r.session_id}  {r.outcome:<12}  {r.kind:<11}  fork of {r.parent}  {plural(r.events, 'event')}"
        )
    gone = sum(r.outcome in ("deleted", "would delete") for r in results)
    verb = "would delete" if args.dry_run else "deleted"
    print(f"nbagent: {verb} {plural(gone, 'session')} idle for over {args.older_than:g} days")
    return 0


def command_words(message: str, store: str) -> str:
    """An error of the Python API as said on the command line: the advice names commands, not
    functions (``see list_sessions()`` becomes ``nbagent sessions list STORE lists them``)."""
    return (
        message.replace("see list_sessions()", f"`{_prog()} sessions list {store}` lists them")
        .replace(" (or set NBAGENT_DB)", "")
        .replace(
            "(open_session() creates a new file)", "(a notebook's first %inject or %followup creates one)"
        )
    )


def _require(module: str, extra: str, purpose: str) -> None:
    """Exit with the exact install line when ``module`` (from the ``extra`` extra) is missing."""
    from nbagent.notebook.magics.help import importable

    if not importable(module):
        raise SystemExit(
            f'nbagent: {purpose} needs {module}, which is not installed: pip install "nbagent[{extra}]"'
        )


DESCRIPTION = """\
An LLM agent session that lives in a Jupyter kernel, logged to an append-only SQLite file.
In a notebook: %load_ext nbagent, then %inject, %followup, %steer and %agent."""

EPILOG = """\
examples:
  %(prog)s demo                    the offline tour, in the terminal
  %(prog)s quickstart              copy quickstart.ipynb here and open it in JupyterLab
  %(prog)s quickstart --headless   run it here and print its outputs"""


def _prog() -> str:
    """``nbagent`` when run as the installed command, ``python -m nbagent`` when run as a module."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return "python -m nbagent" if name in ("", "__main__.py", "-c") else name


def _location(text: str) -> StoreLocation:
    """A store named on the command line, parsed once (a path, or a ``postgresql://`` URL)."""
    from nbagent.errors import NbagentError
    from nbagent.store.location import parse_location

    try:
        return parse_location(text)
    except NbagentError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def transcript_command(file: StoreLocation, session: str | None, fmt: str) -> int:
    """Print a session's transcript (read-only; the file is never changed). ``file`` may be a
    ``postgresql://`` URL; no error shows its password."""
    from nbagent.errors import NbagentError
    from nbagent.labserver.export import transcript
    from nbagent.redaction import scrub

    try:
        sys.stdout.write(transcript(file, session, fmt=fmt))
    except NbagentError as exc:
        print(f"nbagent transcript: {scrub(str(exc))}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    from nbagent import __version__

    parser = argparse.ArgumentParser(
        prog=_prog(),
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    sub.add_parser(
        "demo",
        help="an offline tour in plain Python: inject, follow up, print the log",
        description="Open a session with the offline echo model in a temporary folder, inject context, "
        "follow up, and print the log and the transcript.",
    )
    quick = sub.add_parser(
        "quickstart",
        help="copy the quickstart notebook here and open it in JupyterLab",
        description="Copy quickstart.ipynb into the working directory (unless it is there) and open it in "
        "JupyterLab; without a display it is run headless and its outputs are printed.",
    )
    mode = quick.add_mutually_exclusive_group()
    mode.add_argument(
        "--headless", action="store_true", default=None, help="execute it and print the outputs"
    )
    mode.add_argument(
        "--open", dest="headless", action="store_false", help="open JupyterLab even without a display"
    )
    sessions = sub.add_parser("sessions", help="list sessions, or copy them between stores")
    action = sessions.add_subparsers(dest="action", required=True)
    listing = action.add_parser("list", help="the sessions of a store, most recent first")
    listing.add_argument("store", type=_location, help="a session file path or a postgresql:// URL")
    listing.add_argument(
        "--notebook", metavar="GLOB", help="only sessions whose notebook path matches (e.g. '/home/alice/*')"
    )
    whose = listing.add_mutually_exclusive_group()
    whose.add_argument(
        "--user",
        metavar="NAME",
        help="(postgresql://) the sessions of NAME's schema: the one NAME's role names in nbagent.schema, "
        "else those NAME owns",
    )
    whose.add_argument(
        "--all-users",
        action="store_true",
        help="(postgresql://) the sessions of every nbagent schema of the database, with a user column",
    )
    prune = action.add_parser(
        "prune", help="delete forks (and attribution runs) idle for longer than --older-than days"
    )
    prune.add_argument("store", type=_location, help="a session file path or a postgresql:// URL")
    prune.add_argument("--older-than", type=float, required=True, metavar="DAYS")
    prune.add_argument("--attribution", action="store_true", help="only the forks of attribution runs")
    prune.add_argument("--dry-run", action="store_true", help="say what would go; delete nothing")
    copy = action.add_parser(
        "copy",
        help="copy sessions from SRC to DST (SQLite files or postgresql:// URLs), byte-identical in "
        "events; again later to carry new events over",
    )
    copy.add_argument("source", metavar="SRC", type=_location)
    copy.add_argument("destination", metavar="DST", type=_location)
    copy.add_argument("--session", metavar="ID", help="only this session (default: all of SRC)")
    export = sub.add_parser(
        "transcript",
        help="print a session's transcript: typed prompts and injected context marked apart (read-only)",
    )
    export.add_argument(
        "file", type=_location, help="the session file (e.g. analysis.nbagent.sqlite) or a postgresql:// URL"
    )
    export.add_argument(
        "--session", metavar="ID", help="the session id or a prefix (default: the most recent)"
    )
    export.add_argument(
        "--format", choices=("md", "html"), default="md", help="Markdown (default) or an HTML page"
    )
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "sessions":
        return sessions_command(args)
    if args.command == "demo":
        return demo()
    if args.command == "transcript":
        return transcript_command(args.file, args.session, args.format)
    return quickstart(args.headless)


if __name__ == "__main__":
    raise SystemExit(main())
