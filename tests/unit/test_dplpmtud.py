"""Datagram PLPMTUD (RFC 8899) through QUIC: the target's extensions.plpmtud.quic and datagram_client (bad values
as one line naming the field), the judgement of the DUT's datagram sizes, and the built v6gate-quicpeer refused when
missing or stale (pure logic, no lab)."""

from types import SimpleNamespace

import pytest

from v6gate.core.context import NotApplicable
from v6gate.errors import BenchError, TargetFileError
from v6gate.net import quicpeer
from v6gate.scenario.dplpmtud import (
    BASE_PLPMTU,
    SETTLED_MIN,
    Client,
    Endpoint,
    judge,
    parse,
    search,
    settings,
    stopped_below,
)

QUIC = {"port": 4433, "alpn": "hq-interop", "path": "/4194304"}
CLIENT = {"netns": "ns1", "address": "2001:DB8:5::C", "path_mtu": 1400}


def _t(ext):
    return SimpleNamespace(target=SimpleNamespace(extensions=ext, source="dut.yaml"))


def test_settings_read_the_endpoint_and_the_client():
    endpoint, client, timeout = settings(_t({"plpmtud": {"quic": QUIC, "datagram_client": CLIENT}}))
    assert endpoint == Endpoint(4433, "hq-interop", "/4194304", 4194304)
    assert client == Client("ns1", "2001:db8:5::c", 1400)
    assert timeout == 30.0
    endpoint, _, _ = parse({"quic": {"port": 443, "alpn": "h3", "path": "/big.bin", "octets": 1 << 22}}, "t.yaml")
    assert endpoint == Endpoint(443, "h3", "/big.bin", 1 << 22)


def test_a_target_without_the_endpoint_or_the_client_is_not_applicable():
    with pytest.raises(NotApplicable, match=r"extensions\.plpmtud\.quic"):
        settings(_t({}))
    with pytest.raises(NotApplicable, match=r"extensions\.plpmtud\.datagram_client"):
        settings(_t({"plpmtud": {"quic": QUIC}}))


@pytest.mark.parametrize("raw,field", [
    ({"quic": {"port": 0}}, "quic.port"),
    ({"quic": {"port": True}}, "quic.port"),
    ({"quic": {"port": 4433, "alpn": "two words"}}, "quic.alpn"),
    ({"quic": {"port": 4433, "path": "no-slash"}}, "quic.path"),
    ({"quic": {"port": 4433, "path": "/$(reboot)"}}, "quic.path"),
    ({"quic": {"port": 4433, "path": "/big.bin"}}, "quic.octets"),
    ({"quic": {"port": 4433, "path": "/12"}}, "quic.octets"),
    ({"quic": {"port": 4433, "colour": "red"}}, "quic.colour"),
    ({"quic": [4433]}, "quic"),
    ({"datagram_client": {"address": "not-an-address", "path_mtu": 1400}}, "datagram_client.address"),
    ({"datagram_client": {"address": "2001:db8::5", "path_mtu": 1280}}, "datagram_client.path_mtu"),
    ({"datagram_client": {"address": "2001:db8::5", "path_mtu": 1400, "netns": "a b"}}, "datagram_client.netns"),
    ({"transfer_timeout_s": 0}, "transfer_timeout_s"),
])
def test_bad_values_name_the_field(raw, field):
    with pytest.raises(TargetFileError, match=f"extensions.plpmtud.{field}"):
        parse(raw, "dut.yaml")


def _flow(*runs):
    """(time, size) datagrams: runs of (count, size), 1 ms apart."""
    out, t = [], 10.0
    for count, size in runs:
        for _ in range(count):
            out.append((t, size))
            t += 0.001
    return out


def test_a_search_that_settles_below_the_path_mtu_passes():
    # quic-go on the lab's 1400-octet hop: 1328 first, probes, 1397 in the end
    s = search(_flow((200, 1328), (1, 1414), (100, 1371), (1, 1446), (50, 1392), (1, 1403), (300, 1397)), 1400)
    seen, problems = judge(s, 1400)
    assert problems == []
    assert (len(s.above), s.settled, s.after, s.largest) == (3, 1397, 300, 1446)
    assert "3 datagram(s) above the path MTU 1400 (1403, 1414, 1446 octets" in seen
    assert "the largest 1397 octets (the size it settled at)" in seen


def test_no_probe_fails_for_that_reason():
    s = search(_flow((500, 1328)), 1400)
    seen, problems = judge(s, 1400)
    assert len(problems) == 1 and problems[0].startswith("no probe above the path MTU (1400 octets)")
    assert "its largest datagram was 1328 octets" in problems[0]
    assert "none above the path MTU 1400, the largest 1328 octets" in seen


def test_a_search_that_stops_at_its_own_maximum_below_the_path_mtu_is_not_judged():
    """A DUT whose MAX_PLPMTU is below the path MTU searched (its datagrams grew) but met no black hole: the path
    cannot judge it (no false FAIL "no probe"); one that never grew is still the FAIL above."""
    s = search(_flow((3, 1328), (100, 1328), (1, 1350), (200, 1350)), 1400)
    why = stopped_below(s, 1400)
    assert why is not None and "grew from 1328 to 1350 octets" in why and "path_mtu below 1350" in why
    assert stopped_below(search(_flow((500, 1328)), 1400), 1400) is None
    probing = search(_flow((200, 1328), (1, 1414), (100, 1371), (50, 1397)), 1400)
    assert stopped_below(probing, 1400) is None and judge(probing, 1400)[1] == []
    assert stopped_below(search([], 1400), 1400) is None


def test_datagrams_above_the_path_mtu_to_the_end_do_not_settle():
    s = search(_flow((100, 1328), (1, 1446), (SETTLED_MIN - 1, 1328), (20, 1446)), 1400)
    _, problems = judge(s, 1400)
    assert len(problems) == 1 and "did not settle" in problems[0] and "RFC 8899 §4.4" in problems[0]


def test_settling_at_base_fails():
    s = search(_flow((100, 1200), (1, 1446), (50, BASE_PLPMTU)), 1400)
    _, problems = judge(s, 1400)
    assert len(problems) == 1 and f"not above BASE_PLPMTU {BASE_PLPMTU}" in problems[0]


def test_no_datagrams():
    s = search([], 1400)
    assert (s.datagrams, s.above, s.settled) == (0, [], None)
    _, problems = judge(s, 1400)
    assert problems and problems[0].startswith("no probe above")


def test_the_built_peer_is_refused_when_missing_or_stale(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in quicpeer.SOURCES:
        (src / name).write_text(f"{name}\n")
    build = tmp_path / "build"
    build.mkdir()
    with pytest.raises(BenchError, match=r"not built.*run tools/setup"):
        quicpeer.binary(build, src)
    (build / "v6gate-quicpeer").write_text("#!/bin/sh\n")
    (build / "stamp").write_text("0123456789abcdef\n")
    with pytest.raises(BenchError, match=r"other sources.*run tools/setup"):
        quicpeer.binary(build, src)
    (build / "stamp").write_text(quicpeer.source_digest(src) + "\n")
    assert quicpeer.binary(build, src) == str(build / "v6gate-quicpeer")


def test_the_stamp_is_the_one_tools_setup_writes():
    """tools/setup: cat go.mod go.sum main.go | sha256sum | cut -c1-16."""
    import hashlib
    data = b"".join((quicpeer.SOURCE_DIR / n).read_bytes() for n in ("go.mod", "go.sum", "main.go"))
    assert quicpeer.source_digest() == hashlib.sha256(data).hexdigest()[:16]
    setup = (quicpeer.SOURCE_DIR.parents[3] / "tools" / "setup").read_text()
    assert 'cat "$qsrc/go.mod" "$qsrc/go.sum" "$qsrc/main.go" | sha256sum | cut -c1-16' in setup
