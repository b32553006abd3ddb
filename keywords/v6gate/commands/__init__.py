"""Extra ``v6gate`` subcommands, one module each.  A module defines
``register(subparsers)`` adding its parser with ``set_defaults(func=...)``;
the function takes the parsed args and returns the exit code.  Modules here
are found automatically (no edit of cli.py needed)."""

import importlib
import pkgutil


def register_all(subparsers) -> None:
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{mod.name}")
        if hasattr(module, "register"):
            module.register(subparsers)
