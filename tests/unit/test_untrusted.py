"""The one loader for files someone else wrote (untrusted.py): each limit is
one line naming the file, raised while reading (within a second of CPU),
and what is within the limits loads as PyYAML's SafeLoader / json would
load it.  The CLI side (exit 2, one line, no run) is in test_bad_input.py."""

from __future__ import annotations

import json
import random
import time

import pytest
import yaml

from v6gate import untrusted
from v6gate.errors import InputFileError, UsageError
from v6gate.paths import FIXTURES, REPORTS

SMALL = untrusted.CONFIG.but(kind="test file", max_nodes=1_000, max_depth=8)


def refused(text: str, limits=SMALL, *, json_: bool = False) -> str:
    t0 = time.process_time()
    with pytest.raises(InputFileError) as e:
        (untrusted.parse_json if json_ else untrusted.parse_yaml)(text, "f.yaml", limits)
    assert time.process_time() - t0 < 1.0, "a limit must be hit within a second"
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("f.yaml: "), msg
    assert isinstance(e.value, UsageError) and e.value.exit_code == 2
    return msg


def laughs(levels: int, width: int = 9) -> str:
    return 'l0: &l0 ["lol"]\n' + "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]\n"
                                         for i in range(1, levels + 1))


def test_an_alias_bomb_is_refused_at_the_alias_that_crosses_the_budget():
    msg = refused(laughs(9))  # 9**9 strings once expanded, in 400 bytes
    assert "more than 1,000 values (aliases expanded)" in msg and "line 4 column" in msg


def test_the_real_billion_laughs_against_the_default_limits_is_cheap():
    t0 = time.process_time()
    with pytest.raises(InputFileError, match="more than 50,000 values"):
        untrusted.parse_yaml(laughs(20, 10), "f.yaml")  # 10**20 nodes
    assert time.process_time() - t0 < 0.2


def test_aliases_within_the_budget_load_as_safe_load_does():
    text = "base: &b {mtu: 1500, other_routers: false}\nlink: {<<: *b, mtu: 9000}\nsame: *b\nl: &l [1, 2]\nm: [*l, *l]\n"
    assert untrusted.parse_yaml(text, "f.yaml", SMALL) == yaml.safe_load(text)


def test_aliases_are_refused_where_the_kind_says_so():
    assert "may not use YAML anchors and aliases" in refused("a: &x 1\nb: *x\n", SMALL.but(aliases=False))


@pytest.mark.parametrize("text", ["a: &a [1, *a]\n", "&a {x: {y: *a}}\n", "- &a [[*a]]\n"])
def test_an_alias_inside_the_node_it_names_is_a_cycle(text):
    assert "(a cycle)" in refused(text, untrusted.CONFIG)


def test_depth_counts_what_an_alias_brings():
    deep = "a: &a " + "[" * 6 + "]" * 6 + "\n"
    assert untrusted.parse_yaml(deep, "f.yaml", SMALL)  # 1 + 7 levels
    assert "nested more than 8 levels deep" in refused(deep + "b: [[*a]]\n")


@pytest.mark.parametrize("depth, words", [(9, "nested more than 8 levels deep"),
                                          (100, "nested more than 8 levels deep"),
                                          (100_000, "maximum nesting depth")])  # libyaml's own limit is 1,000
def test_nesting_past_the_limit(depth, words):
    assert words in refused("[" * depth + "]" * depth)


def test_node_count_counts_keys_and_values():
    ok = "{" + ", ".join(f"k{i}: {i}" for i in range(499)) + "}"  # 1 + 2 * 499
    assert len(untrusted.parse_yaml(ok, "f.yaml", SMALL)) == 499
    assert "more than 1,000 values" in refused(ok[:-1] + ", k499: 1, k500: 2}")


def test_size_is_checked_before_reading(tmp_path):
    p = tmp_path / "big.yaml"
    with open(p, "wb") as f:
        f.truncate(2 << 20)  # sparse
    with pytest.raises(InputFileError, match=r"big.yaml: is 2 MiB, over the 1 MiB limit for a target file"):
        untrusted.load_yaml(p)


@pytest.mark.parametrize("text, words", [
    ("a: 1\nb: 2\na: 3\n", "line 3 column 1: duplicate key 'a' (first given at line 1)"),
    ("x: 2024-02-30\n", "cannot read '2024-02-30' as timestamp"),
    ("x: " + "7" * 5000 + "\n", "as int"),
    ('x: "a\\0b"\n', "x: a string holds a NUL character"),
    ('x: ["ok", "\\e[31m"]\n', "x[1]: a string holds the control character"),
    ('"\\x07": 1\n', "a string holds the control character '\\x07'"),
    ("x: !!python/name:os.system\n", "python/name"),
    ("x: !custom 1\n", "!custom"),
    ("a: 1\n---\nb: 2\n", "keep one document"),
    ("a: [1\n", "YAML syntax error at line 2"),
])
def test_what_yaml_would_take_or_choke_on(text, words):
    assert words in refused(text, untrusted.CONFIG)


def test_text_rules_can_be_relaxed_for_machine_written_files():
    assert untrusted.parse_yaml('x: "a\\0b"\n', "f", untrusted.CONFIG.but(strict_text=False)) == {"x": "a\x00b"}


@pytest.mark.parametrize("text, words", [
    ('{"a": 1, "a": 2}', "duplicate key 'a' in one object"),
    ("[" * 70 + "]" * 70, "nested more than 64 levels deep"),
    ("[" * 1_000_000 + "]" * 1_000_000, "nested more than 64 levels deep"),
    ("[" + "9" * 5000 + "]", "4300 digits"),
    ('["\\udc00"]', "[0]: a string holds a lone surrogate"),
    ('{"a": ', "line 1 column 7: not JSON"),
    ("[" + ",".join(["{}"] * 2_000_000) + "]", "more than 2,000,000 values"),
    ("[" + ",".join(['"a, [b: {c"'] * 2_000_000) + "]", "more than 2,000,000 values"),
])
def test_json_limits(text, words):
    assert words in refused(text, untrusted.RUN_OUTPUT, json_=True)


@pytest.mark.parametrize("text", [
    '{"a": [1, 2, {"b": null, "c": []}], "d": {}, "e": "x, y: [z] {w}", "f": [ ], "g": { }, "h": "\\"[,"}',
    '[""]', '{"": [""]}', '["\\\\", "\\\\\\"", ["\\\\"]]',
    "[]", "{}", '""', "[[], [[]], {}]",
])
def test_the_json_count_before_parsing_is_the_count_of_the_parsed_document(text):
    doc = json.loads(text)
    assert untrusted._json_nodes(text, 0) == _walked(doc)


def test_the_json_count_is_exact_across_chunk_boundaries():
    """Strings of quotes, backslashes and brackets, cut anywhere by a 7-character chunk."""
    rng = random.Random(31)
    for _ in range(300):
        words = ["".join(rng.choice(['"', "\\", "a", ",", "[", "]", "{", ":"]) for _ in range(rng.randint(0, 6)))
                 for _ in range(rng.randint(0, 12))]
        doc = [words, {w: [] if i % 2 else [""] for i, w in enumerate(words)}, [[], {}, [""], [[]]]]
        text = json.dumps(doc, indent=rng.choice([None, 1]))
        assert untrusted._json_nodes(text, 0, step=7) == _walked(doc), text


def test_the_json_count_of_a_real_controls_file():
    path = REPORTS / "controls.json"
    text = path.read_text()
    assert untrusted._json_nodes(text, 0) == _walked(json.loads(text)) > 10_000


def _walked(doc) -> int:
    stack, n = [doc], 0
    while stack:
        x = stack.pop()
        n += 1
        if isinstance(x, dict):
            n += len(x)
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return n


def test_every_yaml_data_file_of_the_project_loads_within_its_limits():
    paths = sorted(FIXTURES.rglob("*.yaml"))
    assert len(paths) > 20
    for p in paths:
        limits = untrusted.CONFIG if "targets" in p.parts or "deviations" in p.parts else untrusted.FIXTURE
        assert untrusted.load_yaml(p, limits) == yaml.safe_load(p.read_text()) or p.stat().st_size < 10, p


@pytest.mark.parametrize("make, words", [
    (lambda d: d, "is a directory"),
    (lambda d: d / "none.yaml", "file not found"),
    (lambda d: _fifo(d / "fifo.yaml"), "not a regular file"),
    (lambda d: _bytes(d / "bin.yaml", b"a: \xff\xfe\n"), "not a text file (byte 3 is not UTF-8)"),
    (lambda d: _bytes(d / "nul.yaml", b"a: 1\nb: \x00\n"), "a NUL byte on line 2"),
])
def test_what_is_not_a_yaml_file(tmp_path, make, words):
    with pytest.raises(InputFileError, match=words.replace("(", r"\(").replace(")", r"\)")):
        untrusted.load_yaml(make(tmp_path))


def _fifo(p):
    import os

    os.mkfifo(p)
    return p


def _bytes(p, data):
    p.write_bytes(data)
    return p


def test_a_utf8_bom_is_accepted(tmp_path):
    p = tmp_path / "bom.yaml"
    p.write_bytes(b"\xef\xbb\xbfname: x\n")
    assert untrusted.load(p) == {"name": "x"}
