"""``lrlib`` command line: one subcommand per job, each defined next to its code.

Subcommands are listed in :data:`COMMANDS` (name -> (module, help)), and plugins add
theirs (:mod:`lrlib.plugins`, e.g. the research wing's ``inject``, ``live``); the module
provides ``add_arguments(parser)`` and ``run(args) -> int``, and may provide
``plan(args) -> str``: one line, printed before the work starts, saying what the command
will compute and roughly how long it takes.

A user error (an unknown reducer, option, prompt, view or split, a missing dataset, an
endpoint without a model, a bad argument) prints one line that names the valid choices and
exits with status 2; ``--debug`` (or ``LRLIB_DEBUG=1``) shows the traceback instead.

``--prompts FILE`` (or ``--plugins FILE``) on the commands that take reducers or a prompt
imports a Python file of the user's first (:func:`load_user_file`), so the prompt variants
and reducers it registers can be named like the built-in ones.

>>> main(["evaluate", "--reducers", "nope"])
2
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

from lrlib import settings
from lrlib.llm.errors import LLMError

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module implementing add_arguments/run, one-line help)
    "import-traces": (
        "lrlib.data.import_command",
        "import BrowserGym/AgentLab experiment folders into a dataset",
    ),
    "run": ("lrlib.report.run", "run LineRetriever over the dataset (cached, resumable)"),
    "evaluate": ("lrlib.report.evaluate_command", "evaluate reducers offline on the dataset"),
    "figures": ("lrlib.report.plots", "execute every notebook headlessly and rewrite figures/"),
    "cache": (
        "lrlib.report.cache_command",
        "show the answer caches; --refresh (maintainers) rewrites the shipped one",
    ),
}


class UsageError(Exception):
    """A mistake of the user's, reported as one line (exit status 2)."""


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, unless its help already names it or there is none."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        unset = action.default is None or (
            action.default is False and not isinstance(action, argparse.BooleanOptionalAction)
        )
        return text if unset or "default" in text else str(super()._get_help_string(action))


class Parser(argparse.ArgumentParser):
    """argparse with help that shows defaults and errors on one line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """One line: the problem and the valid choices (argparse lists them), status 2."""
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


#: the exceptions that mean "the user asked for something that does not exist": the
#: registries' KeyErrors and ValueErrors (their messages list the valid names), missing files,
#: an output that would replace data (``import-traces``), reducer options a constructor
#: refuses, and endpoint configuration errors
USER_ERRORS = (LookupError, ValueError, TypeError, FileNotFoundError, FileExistsError,
               NotADirectoryError, LLMError, UsageError)  # fmt: skip


def add_debug(parser: argparse.ArgumentParser, default: Any) -> None:
    """``--debug``, accepted before or after the subcommand (a subcommand's default is
    ``SUPPRESS`` so that ``lrlib --debug evaluate`` is not reset by the subparser)."""
    parser.add_argument(
        "--debug",
        action="store_true",
        default=default,
        help="show tracebacks instead of one-line errors",
    )


def sized_terminal() -> None:
    """Progress bars on a pseudo-terminal that reports a 0 x 0 size (``script``, some IDE
    and agent runners): tqdm draws nothing there, so give it a size through its documented
    ``TQDM_NCOLS``/``TQDM_NROWS`` defaults (a value the user set is kept)."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):  # not a terminal: tqdm prints plain lines
        return
    if size.columns <= 0 or size.lines <= 0:
        settings.export_env("TQDM_NCOLS", "100", replace=False)
        settings.export_env("TQDM_NROWS", "24", replace=False)


#: the user files imported so far: module name -> file
USER_MODULES: dict[str, Path] = {}


def load_user_file(path: str | Path) -> ModuleType:
    """Import the user's Python file at ``path`` (``--prompts``/``--plugins``) as a module
    named after it: the prompt variants and reducers it registers become usable by name.
    A file is imported once per process (named again, it is not run again).

    A missing file is a FileNotFoundError; an exception the file raises, a UsageError
    naming the file (the original is its ``__cause__``).

    >>> import tempfile
    >>> mine = Path(tempfile.mkdtemp()) / "doc_prompts.py"
    >>> _ = mine.write_text("import lrlib\\nNAMES = lrlib.list_prompts()\\n")
    >>> "paper" in load_user_file(mine).NAMES
    True
    """
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise FileNotFoundError(f"--prompts/--plugins: no such file {str(path)!r}")
    name = file.stem
    if name in sys.modules:
        if USER_MODULES.get(name) == file:
            return sys.modules[name]
        if name not in USER_MODULES:
            raise UsageError(
                f"{path}: a module named {name!r} is already imported; rename the file"
            )
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would (dataclasses, pickling look it up)
    USER_MODULES[name] = file
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name], USER_MODULES[name]
        raise UsageError(f"{path} raised {type(exc).__name__}: {exc}") from exc
    return module


def early_arguments(argv: list[str]) -> argparse.Namespace:
    """What must be known before the parser is built: the command, ``--debug``, and the
    user files (``--prompts``/``--plugins``) whose prompt variants and reducers the
    subcommands' choices and help must already list.

    >>> early_arguments(["run", "--limit", "2", "--prompts", "mine.py"]).user_files
    ['mine.py']
    """
    from lrlib.eval.evaluation import USER_FILES

    early = Parser(prog="lrlib", add_help=False, allow_abbrev=False)
    early.add_argument("command", nargs="?")
    early.add_argument("--debug", action="store_true")
    early.add_argument(*USER_FILES, dest="user_files", action="append", default=[])
    return early.parse_known_args(argv)[0]


def fail(command: str | None, exc: BaseException) -> int:
    """Report a user error on one line (a KeyError's message unquoted); status 2."""
    where = f"lrlib {command}" if command else "lrlib"
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    text = " ".join(str(text).split()) or type(exc).__name__
    print(f"{where}: error: {text} (--debug shows the traceback)", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``lrlib`` command."""
    argv = sys.argv[1:] if argv is None else list(argv)
    early = early_arguments(argv)
    try:
        debug = early.debug or settings.current().debug
    except settings.SettingsError as exc:
        return fail(early.command, exc)
    try:
        for path in early.user_files:
            load_user_file(path)
    except (UsageError, FileNotFoundError) as exc:
        if debug:
            raise
        return fail(early.command, exc)
    parser = Parser(prog="lrlib", description=__doc__.splitlines()[0].replace("``", ""))
    add_debug(parser, default=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    modules = {}
    from lrlib.plugins import commands

    for name, (module, help_text) in sorted({**COMMANDS, **commands()}.items()):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue  # a command whose module is not part of this checkout
        if not (hasattr(mod, "add_arguments") and hasattr(mod, "run")):  # a broken plugin
            print(f"lrlib: {name} skipped: {module} lacks add_arguments/run", file=sys.stderr)
            continue
        modules[name] = mod
        command = sub.add_parser(name, help=help_text, description=help_text)
        mod.add_arguments(command)
        add_debug(command, default=argparse.SUPPRESS)  # `lrlib evaluate --debug` works too
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    debug = args.debug or debug
    sized_terminal()
    mod = modules[args.command]
    try:
        if isinstance(getattr(args, "reducers", None), str):
            from lrlib.eval.evaluation import specs_of

            specs_of(args)  # an unknown reducer or option fails here, before the plan line
        if hasattr(mod, "plan"):
            print(f"lrlib {args.command}: {mod.plan(args)}", file=sys.stderr, flush=True)
        return int(mod.run(args) or 0)
    except USER_ERRORS as exc:
        if debug:
            raise
        return fail(args.command, exc)
    except KeyboardInterrupt:
        print(f"lrlib {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
