"""The ``nbagent`` command (also ``python -m nbagent``): ``demo`` and ``quickstart``."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TUTORIAL = "quickstart.ipynb"


def _tutorial_source() -> Path:
    """The quickstart shipped with nbagent: ``notebooks/`` of a checkout, or a copy inside the package."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "notebooks" / TUTORIAL, here / "notebooks" / TUTORIAL):
        if candidate.exists():
            return candidate
    raise SystemExit(f"nbagent: cannot find {TUTORIAL} next to the package ({here})")


async def _demo(folder: Path) -> None:
    import nbagent
    from nbagent.context import cell_text
    from nbagent.notebook.transcript import transcript

    path = folder / "demo.nbagent.sqlite"
    agent = nbagent.open_session(path, model="echo")
    print(f"session {agent.session_id[:8]} in {path}\n")
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
        data = event.data
        where = ".".join(str(data[k]) for k in ("turn", "step") if k in data)
        if event.type == "agent/inbox/spliced":
            inserted = [m["source"]["kind"] for m in data["inserted"]]
            where = f"{data['target']}: " + (
                f"+{inserted}" if inserted else f"claimed {data.get('removed_count')}"
            )
        elif event.type == "user/message":
            where = f"[{data['source']['kind']}] {data['content'][0]['text']}"
        print(f"  {event.seq:3} {event.type:20} {where}")
    print("\n" + transcript(agent.events, title="Transcript"))
    await agent.close()


def demo() -> int:
    """Open a session with the echo model in a temporary folder, inject, follow up, print the log."""
    with tempfile.TemporaryDirectory(prefix="nbagent-demo-") as folder:
        asyncio.run(_demo(Path(folder)))
    return 0


def quickstart(headless: bool | None) -> int:
    """Copy the quickstart into the working directory (if missing) and open it, or run it headless."""
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
        return subprocess.call([sys.executable, "-m", "jupyterlab", str(target)])
    from nbagent.notebook.headless import output_text, run_notebook

    nb = run_notebook(target)
    for cell in nb.cells:
        if cell.cell_type == "code":
            print(f"In [{cell.get('execution_count') or ' '}]: {cell.source}")
            shown = output_text(cell).rstrip()
            if shown:
                print(shown)
            print()
    print(
        f"nbagent: executed {target} (outputs saved in it); the session log is {target.with_suffix('').name}.nbagent.sqlite"
    )
    return 0


def _require(module: str, extra: str, purpose: str) -> None:
    """Exit with the exact install line when ``module`` (from the ``extra`` extra) is missing."""
    from nbagent.notebook.help import importable

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
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "demo":
        return demo()
    return quickstart(args.headless)


if __name__ == "__main__":
    raise SystemExit(main())
