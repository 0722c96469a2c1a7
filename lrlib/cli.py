"""``lrlib`` command line: one subcommand per job, each defined next to its code.

Subcommands register themselves in :data:`COMMANDS` (name -> (module, help)); the module
provides ``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module implementing add_arguments/run, one-line help)
    "import-traces": (
        "lrlib.importer",
        "import BrowserGym/AgentLab experiment folders into a dataset",
    ),
    "serve": ("lrlib.server", "serve the embedded local model (OpenAI-compatible, 127.0.0.1)"),
    "run": ("lrlib.run", "run LineRetriever over the dataset (cached, resumable)"),
    "embeddings": ("lrlib.packs", "compute the notebooks' embeddings and write the vector pack"),
    "evaluate": ("lrlib.evaluation", "evaluate reducers offline on the dataset"),
    "inject": ("lrlib.injection_eval", "build and score the prompt-injection benchmark"),
    "figures": ("lrlib.figures", "execute every notebook headlessly and rewrite figures/"),
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``lrlib`` command."""
    parser = argparse.ArgumentParser(prog="lrlib", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = {}
    for name, (module, help_text) in sorted(COMMANDS.items()):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue  # a command whose module is not part of this checkout
        modules[name] = mod
        mod.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    return int(modules[args.command].run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
