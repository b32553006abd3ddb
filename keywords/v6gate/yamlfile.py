"""YAML as v6gate reads its own data files (fixtures/: faults, topology, gate
profiles, the capability catalogue): through the one untrusted loader
(``untrusted.py``: size, depth, nodes with aliases expanded, duplicate keys
refused, text) with its ``FIXTURE`` limits.  A file someone else gives us
(a target, waivers, a baseline) is read with ``untrusted.load_yaml`` /
``load_json`` and the limits of its kind."""

from __future__ import annotations

from pathlib import Path

from . import untrusted


def load_data_file(path: str | Path, kind: str = "data file") -> object:
    """A data file; anything wrong is one line naming the file (InputFileError, a UsageError: exit 2)."""
    return untrusted.load_yaml(path, untrusted.FIXTURE.but(kind=kind))


def load(text: str, name: str = "<YAML text>") -> object:
    """YAML text already in memory, with the same limits (prefer load_data_file: its errors name the file)."""
    return untrusted.parse_yaml(text, name, untrusted.FIXTURE)
