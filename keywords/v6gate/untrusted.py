"""The one loader for YAML and JSON files that someone else may have written.

Target files, waiver files, baselines, run directories, campaigns,
inventories and exception registers come from vendor CI, shared
repositories and agency uploads: every one is read through here, with
limits, so that a small hostile file cannot hang a run or exhaust memory
(a 600-byte YAML file of nested aliases expands to a billion nodes in what
walks it: the schema check, the report writers).

Each limit is checked while the file is read, before anything walks the
result, and ends in one line naming the file, where and what to fix
(``InputFileError``, a ``UsageError``: exit 2):

* size: the file's bytes (``max_bytes``), checked before it is read;
* depth: nesting of mappings and lists (``max_depth``), aliases expanded;
* node count: every mapping, list, key and scalar (``max_nodes``), aliases
  expanded, i.e. what a consumer walking the result would visit; an alias
  costs the size of what it names, so an alias bomb hits this at once;
* aliases: allowed within the node budget, or refused (``aliases=False``);
  an alias to the node that contains it (a cycle) is always refused;
* duplicate keys in one mapping (plain YAML and JSON keep the last one
  silently);
* text: UTF-8 only; no lone surrogates (they cannot be written to a
  report); with ``strict_text`` no NUL or other control characters except
  tab, newline and carriage return in any string;
* values YAML cannot construct (2024-02-30, a 5,000-digit integer) are the
  file's error with their line, not a traceback.

YAML is scanned and parsed by libyaml (C) when PyYAML has it, composed here
in Python (where the limits are counted) and constructed by PyYAML's
SafeConstructor: no Python objects, no custom tags.

API (docs: /work/coord/notes/loader.md)::

    from v6gate import untrusted
    doc = untrusted.load_yaml(path, untrusted.CONFIG)           # a file a person wrote
    doc = untrusted.load_json(path, untrusted.RUN_OUTPUT)       # a results.json given back to us
    doc = untrusted.load(path, untrusted.CONFIG)                # by suffix: .json -> JSON, else YAML
    doc = untrusted.parse_yaml(text, name, untrusted.CONFIG)    # text already read (an archive member)
    limits = untrusted.CONFIG.but(kind="campaign file", max_nodes=200_000)
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, replace
from pathlib import Path

import yaml
import yaml.composer
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.resolver import Resolver

from .errors import InputFileError

__all__ = ["CONFIG", "FIXTURE", "RUN_OUTPUT", "InputFileError", "Limits", "decode", "load", "load_json", "load_yaml",
           "parse_json", "parse_yaml", "read_bytes", "read_text"]


@dataclass(frozen=True)
class Limits:
    """What one kind of file may be.  ``kind`` names it in the error ("target file")."""

    kind: str = "file"
    max_bytes: int = 1 << 20
    max_depth: int = 32
    max_nodes: int = 50_000
    aliases: bool = True
    strict_text: bool = True

    def but(self, **changes) -> Limits:
        return replace(self, **changes)


# A file a person writes: target, waivers, campaign, inventory, exception register.  Real ones are a few kB,
# 5 levels deep, a few hundred nodes (the lab's dhcpv6 deviations, the largest waiver file: 17 kB, 900 nodes).
CONFIG = Limits(kind="target file", max_bytes=1 << 20, max_depth=32, max_nodes=50_000)
# The project's own data files (fixtures/): the same rules, a little more room (the checklist is 38 kB).
FIXTURE = Limits(kind="data file", max_bytes=4 << 20, max_depth=32, max_nodes=400_000)
# What a run wrote, given back to us (a baseline, diff inputs, a run directory's records): JSON, larger.
# (reports/controls.json of 1,400 parts: 3 MB, 70,000 nodes; a results.json of 700 parts is smaller)
RUN_OUTPUT = Limits(kind="results file", max_bytes=64 << 20, max_depth=64, max_nodes=2_000_000, aliases=False,
                    strict_text=False)


# -- reading ---------------------------------------------------------------------------------------
def _size(n: int) -> str:
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.3g} {unit}"
    return f"{n} bytes"


def read_bytes(path: str | Path, limits: Limits) -> bytes:
    """The file's bytes, at most ``limits.max_bytes``: a regular file only (a FIFO would block the open, a device
    like /dev/zero never ends), its size checked before it is read and again while reading (a growing file)."""
    path = Path(path)
    fix = f"pass a {limits.kind}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputFileError(path, None, "file not found", fix) from None
    except OSError as exc:
        raise InputFileError(path, None, f"cannot read ({exc.strerror or exc})", f"{fix} that is readable") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputFileError(path, None, "is a directory", fix)
        if not stat.S_ISREG(st.st_mode):
            raise InputFileError(path, None, "is not a regular file (a device, FIFO or socket)", fix)
        if st.st_size > limits.max_bytes:
            raise InputFileError(path, None, f"is {_size(st.st_size)}, over the {_size(limits.max_bytes)} "
                                 f"limit for a {limits.kind}", f"check it is the right file ({fix})")
        chunks, left = [], limits.max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    except OSError as exc:
        raise InputFileError(path, None, f"cannot read ({exc.strerror or exc})", fix) from None
    finally:
        os.close(fd)
    if len(data) > limits.max_bytes:
        raise InputFileError(path, None, f"is over the {_size(limits.max_bytes)} limit for a {limits.kind}",
                             f"check it is the right file ({fix})")
    return data


def read_text(path: str | Path, limits: Limits) -> str:
    """The file as UTF-8 text, bounded by ``limits.max_bytes``; one line (InputFileError) for anything else."""
    return decode(read_bytes(path, limits), path, limits)


def decode(data: bytes, name, limits: Limits) -> str:
    """Bytes already read (an archive member) as UTF-8 text without NUL; InputFileError naming ``name``."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(name, None, f"not a text file (byte {exc.start} is not UTF-8)",
                             f"pass a {limits.kind} saved as UTF-8 text") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise InputFileError(name, None, f"not a text file (a NUL byte on line {line})", f"pass a {limits.kind}")
    return text


# -- YAML ------------------------------------------------------------------------------------------
class _Limit(yaml.YAMLError):
    """A limit hit while composing (carries its one line's problem and fix, and where)."""

    def __init__(self, problem: str, fix: str, mark=None):
        super().__init__(problem)
        self.problem, self.fix, self.problem_mark = problem, fix, mark


class _BoundedComposer(Composer):
    """PyYAML's Composer, counting what a consumer would walk: nodes and depth with aliases expanded."""

    limits: Limits

    def _start_limits(self, limits: Limits) -> None:
        self.limits = limits
        self._nodes = 0  # expanded nodes so far
        self._depth = 0  # depth of the node being composed (root: 1)
        self._size: dict[int, int] = {}  # id(node) -> expanded node count (anchored nodes only)
        self._height: dict[int, int] = {}  # id(node) -> expanded height
        self._open: list[str] = []  # anchors of the nodes being composed

    def _count(self, n: int, mark) -> None:
        self._nodes += n
        if self._nodes > self.limits.max_nodes:
            raise _Limit(f"more than {self.limits.max_nodes:,} values (aliases expanded), the limit for a "
                         f"{self.limits.kind}", "make it smaller" + (" or use fewer aliases" if self.limits.aliases
                                                                     else ""), mark)

    def _deep(self, depth: int, mark) -> None:
        if depth > self.limits.max_depth:
            raise _Limit(f"nested more than {self.limits.max_depth} levels deep (aliases expanded), the limit for "
                         f"a {self.limits.kind}", "flatten it", mark)

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            if not self.limits.aliases:
                raise _Limit(f"an alias (*{event.anchor}): a {self.limits.kind} may not use YAML anchors and aliases",
                             "write the value out", event.start_mark)
            if event.anchor in self._open:
                raise _Limit(f"the alias *{event.anchor} is inside the node it names (a cycle)",
                             "remove the alias", event.start_mark)
            node = super().compose_node(parent, index)  # the anchored node (or PyYAML's "undefined alias")
            self._count(self._size.get(id(node), 1), event.start_mark)
            self._deep(self._depth + self._height.get(id(node), 1), event.start_mark)
            return node
        if not isinstance(event, (ScalarEvent, SequenceStartEvent, MappingStartEvent)):
            return super().compose_node(parent, index)  # PyYAML reports the unexpected event
        before = self._nodes
        self._count(1, event.start_mark)
        self._depth += 1
        self._deep(self._depth, event.start_mark)
        anchor = event.anchor
        if anchor is not None:
            self._open.append(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            if anchor is not None:
                self._open.pop()
        height = 1
        if isinstance(node.value, list):
            for child in node.value:
                for n in (child if isinstance(child, tuple) else (child,)):
                    height = max(height, 1 + self._height.get(id(n), 1))
        if height > 1:
            self._height[id(node)] = height
        if anchor is not None:
            self._size[id(node)] = self._nodes - before
        return node


class _StrictConstructor(SafeConstructor):
    """SafeConstructor that refuses a key given twice in one mapping, and whose value errors carry a line."""

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError, TypeError) as exc:  # e.g. 2024-02-30, a 5,000-digit integer
            raise ConstructorError(None, None, f"cannot read {str(node.value)[:40]!r} as "
                                   f"{node.tag.rsplit(':', 1)[-1]} ({str(exc).split(':')[0][:80]})",
                                   node.start_mark) from None

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # unhashable key: SafeConstructor reports it
                    continue
                if first is not None:
                    raise ConstructorError(None, None, f"duplicate key {key!r} (first given at line {first + 1})",
                                           key_node.start_mark)
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


try:  # libyaml's scanner and parser (PyYAML's wheels carry it); the pure-Python ones otherwise
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover
    _Parser = None

if _Parser is not None:
    class _Loader(_BoundedComposer, _Parser, _StrictConstructor, Resolver):
        def __init__(self, stream, limits: Limits):
            _Parser.__init__(self, stream)
            Composer.__init__(self)
            _StrictConstructor.__init__(self)
            Resolver.__init__(self)
            self._start_limits(limits)

        # libyaml's CParser brings its own get_node/get_single_node; ours (Composer's) count the limits
        check_node = Composer.check_node
        get_node = Composer.get_node
        get_single_node = Composer.get_single_node
else:  # pragma: no cover - PyYAML without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Loader(Reader, Scanner, Parser, _BoundedComposer, _StrictConstructor, Resolver):  # type: ignore[no-redef]
        def __init__(self, stream, limits: Limits):
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)
            _StrictConstructor.__init__(self)
            Resolver.__init__(self)
            self._start_limits(limits)


def _where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return f"line {mark.line + 1} column {mark.column + 1}" if mark else ""


def parse_yaml(text: str, name, limits: Limits = CONFIG):
    """Parse YAML ``text`` (named ``name`` in errors) within ``limits``; InputFileError (exit 2) on anything wrong."""
    if len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise InputFileError(name, None, f"is over the {_size(limits.max_bytes)} limit for a {limits.kind}",
                             "check it is the right file")
    loader = _Loader(text, limits)
    try:
        doc = loader.get_single_data()
    except _Limit as exc:
        raise InputFileError(name, _where(exc) or None, exc.problem, exc.fix) from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if getattr(exc, "context", None) and isinstance(exc, yaml.composer.ComposerError):
            problem = f"{exc.context}, {problem}"  # "expected a single document in the stream, but found another"
        syntax = not isinstance(exc, (ConstructorError, yaml.composer.ComposerError))
        where = _where(exc)
        fix = ("give each key once" if "duplicate key" in problem else
               "define the anchor (&name) before its alias" if "undefined alias" in problem else
               "keep one document (no second '---')" if "another document" in problem else
               "fix the YAML syntax (indentation, colons, quotes)" if syntax else "fix the value")
        raise InputFileError(name, None, f"YAML {'syntax ' if syntax else ''}error{' at ' + where if where else ''}: "
                             f"{problem}", fix) from None
    except RecursionError:
        raise InputFileError(name, None, f"nested too deep for a {limits.kind}", "flatten it") from None
    finally:
        loader.dispose()
    _check_strings(doc, name, limits)
    return doc


def load_yaml(path: str | Path, limits: Limits = CONFIG):
    """A YAML file within ``limits``: its document (None when empty); InputFileError (exit 2) on anything wrong."""
    return parse_yaml(read_text(path, limits), path, limits)


# -- JSON ------------------------------------------------------------------------------------------
class _JsonLimit(Exception):
    pass


_JSON_EMPTY_SPACED = re.compile(r"\[\s+\]|\{\s+\}")


def _json_outside_strings(text: str, step: int = 1 << 22) -> str:
    """JSON ``text`` with each string replaced by ``0``, in C-speed steps: escaped backslashes and quotes dropped
    first (JSON pairs backslashes left to right, as str.replace does), then what lies between quotes, a chunk at
    a time (the list of pieces stays small)."""
    bare = text.replace("\\\\", "").replace('\\"', "")
    out, inside = [], False
    for i in range(0, len(bare), step):
        parts = bare[i:i + step].split('"')
        out.append("0".join(parts[1::2] if inside else parts[0::2]))  # a string becomes 0 (not "[]" from '[""]')
        if len(parts) % 2 == 0:  # an odd number of quotes in this chunk
            inside = not inside
        if inside and len(parts) > 1:  # a string begun in this chunk goes on in the next
            out.append("0")
    return "".join(out)


def _json_nodes(text: str, bound: int, step: int = 1 << 22) -> int:
    """Values and keys in JSON ``text``, counted before it is parsed (as ``_walk`` counts them): outside its
    strings, every value or key but the first follows a comma, a colon or an opening bracket that is not
    closed at once.  (When even the raw text has no more than ``bound`` of those, that is enough.)"""
    def marks(t: str) -> int:
        return 1 + t.count(",") + t.count(":") + t.count("[") + t.count("{")

    if marks(text) <= bound:
        return marks(text)
    bare = _json_outside_strings(text, step)
    empty = bare.count("[]") + bare.count("{}") + len(_JSON_EMPTY_SPACED.findall(bare))
    return marks(bare) - empty


def parse_json(text: str, name, limits: Limits = RUN_OUTPUT):
    """Parse JSON ``text`` within ``limits`` (duplicate keys refused); InputFileError (exit 2) on anything wrong."""
    if _json_nodes(text, limits.max_nodes) > limits.max_nodes:
        raise InputFileError(name, None, f"more than {limits.max_nodes:,} values, the limit for a {limits.kind}",
                             "check it is the right file")

    def pairs(items):
        out = dict(items)
        if len(out) != len(items):
            seen: set = set()
            dup = next(k for k, _ in items if k in seen or seen.add(k))
            raise _JsonLimit(f"duplicate key {dup[:80]!r} in one object")
        return out

    try:
        doc = json.loads(text, object_pairs_hook=pairs)
    except _JsonLimit as exc:
        raise InputFileError(name, None, str(exc), "give each key once") from None
    except json.JSONDecodeError as exc:
        raise InputFileError(name, f"line {exc.lineno} column {exc.colno}", f"not JSON: {exc.msg}",
                             f"pass a {limits.kind}") from None
    except RecursionError:
        raise InputFileError(name, None, f"nested more than {limits.max_depth} levels deep, the limit for a "
                             f"{limits.kind}", "flatten it") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise InputFileError(name, None, f"not usable JSON ({str(exc).split(':')[0][:80]})",
                             f"pass a {limits.kind}") from None
    _walk(doc, name, limits)
    return doc


def load_json(path: str | Path, limits: Limits = RUN_OUTPUT):
    """A JSON file within ``limits``; InputFileError (exit 2) on anything wrong."""
    return parse_json(read_text(path, limits), path, limits)


def load(path: str | Path, limits: Limits = CONFIG):
    """YAML or JSON by the file's suffix (.json is JSON; YAML reads JSON too, but JSON's parser is faster)."""
    return (load_json if str(path).endswith(".json") else load_yaml)(path, limits)


# -- what every document passes --------------------------------------------------------------------
_BAD_STRICT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_BAD_ANY = re.compile(r"[\ud800-\udfff]")


def _walk(doc, name, limits: Limits) -> None:
    """Depth and node count of a parsed document, iteratively (JSON's parser counts only objects);
    then its strings."""
    stack, nodes = [(doc, 1)], 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > limits.max_depth:
            raise InputFileError(name, None, f"nested more than {limits.max_depth} levels deep, the limit for a "
                                 f"{limits.kind}", "flatten it")
        if isinstance(node, dict):
            nodes += len(node)
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
        if nodes > limits.max_nodes:
            raise InputFileError(name, None, f"more than {limits.max_nodes:,} values, the limit for a {limits.kind}",
                                 "check it is the right file")
    _check_strings(doc, name, limits)


def _check_strings(doc, name, limits: Limits) -> None:
    bad = _BAD_STRICT if limits.strict_text else _BAD_ANY
    seen: set[int] = set()  # aliased containers are walked once
    stack, path = [(doc, "")], ""
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            m = bad.search(node)
            if m:
                what = ("a lone surrogate" if "\ud800" <= m.group() <= "\udfff" else
                        "a NUL character" if m.group() == "\x00" else f"the control character {m.group()!r}")
                raise InputFileError(name, path or None, f"a string holds {what} (\\u{ord(m.group()):04x})",
                                     "remove it: only printable text, tab and newline are accepted")
        elif isinstance(node, (dict, list)):
            if id(node) in seen:
                continue
            seen.add(id(node))
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in items:
                sub = f"{path}[{k}]" if isinstance(node, list) else (f"{path}.{k}" if path else str(k))
                if isinstance(k, str):
                    stack.append((k, sub))
                stack.append((v, sub))
