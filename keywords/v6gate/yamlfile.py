"""YAML as v6gate reads its data files: safe, and a key given twice in one
mapping is an error (plain YAML keeps the last one silently, so a second
``extensions:`` block in a target file would drop the first without a word)."""

from __future__ import annotations

import yaml
from yaml.constructor import ConstructorError


class _StrictLoader(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # unhashable key: SafeLoader reports it
                    continue
                if first is not None:
                    raise ConstructorError(None, None, f"duplicate key {key!r} (first given at line {first + 1})",
                                           key_node.start_mark)
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def load(text: str):
    """Parse ``text``; raises yaml.YAMLError (with ``problem``/``problem_mark``) on bad YAML or a duplicate key."""
    return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass


def describe(exc: yaml.YAMLError) -> str:
    """One line: where and what ("line 12 column 1: duplicate key 'extensions' ...")."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1} column {mark.column + 1}" if mark else "somewhere"
    return f"{where}: {getattr(exc, 'problem', None) or 'syntax error'}"


def load_data_file(path) -> object:
    """A fixture data file (faults, topology, gate profiles); bad YAML is a one-line UsageError naming the file."""
    from pathlib import Path

    from .errors import UsageError

    path = Path(path)
    try:
        return load(path.read_text())
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: YAML error at {describe(exc)}; fix the file") from None
