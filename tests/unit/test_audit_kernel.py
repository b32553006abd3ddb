"""The counting kernel (``scankernel.c``) counts exactly the frames the
deep path would only have counted, in every capture layout the reader
takes: pcapng in both byte orders, sections, interfaces with their own
resolutions and offsets, VLAN tags, frames cut by a snaplen, chunk
boundaries of a parallel read; without a C compiler the audit runs on the
deep path with one line saying so; the V6ONLY_WAIT window it compares in
integer nanoseconds is Python's float comparison; random and damaged
captures never make it read past a frame (AddressSanitizer, UBSan)."""

import json
import os
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from v6gate.audit import kernel
from v6gate.audit.capture import seed_frames, synthesize_mix
from v6gate.audit.fast import I64_MAX, I64_MIN, _ns_after, read_into
from v6gate.audit.findings import judge_host
from v6gate.audit.fixtures import CAPTURES
from v6gate.audit.hosts import Audit
from v6gate.audit.pcapread import Reader


def findings(audit: Audit) -> str:
    return json.dumps({mac: [(j.finding.id, j.verdict, j.seen, j.measurements) for j in judge_host(audit, h)]
                       for mac, h in sorted(audit.hosts.items())}, sort_keys=True, default=sorted)


def state(audit: Audit) -> str:
    """Every host's counters and firsts (what the findings are judged from), as text."""
    import dataclasses

    def plain(x):
        if isinstance(x, dict):
            return sorted((repr(k), plain(v)) for k, v in x.items())
        if isinstance(x, (set, frozenset)):
            return sorted(repr(v) for v in x)
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        return x

    return repr(sorted((m, plain(dataclasses.asdict(h))) for m, h in audit.hosts.items()))


def both(path, **kw):
    deep, fast = Audit(), Audit()
    every = read_into(deep, path, deep_only=True)
    some = read_into(fast, path, **kw)
    assert every["packets"] == some["packets"] == every["deep_frames"]
    assert state(fast) == state(deep)
    assert findings(fast) == findings(deep)
    assert (fast.frames, fast.t0, fast.t_last) == (deep.frames, deep.t0, deep.t_last)
    return every, some


@pytest.fixture(scope="module")
def mix_frames(tmp_path_factory):
    """(ns, frame) of a small realistic mix: payload of known hosts, 3 % control traffic, IPv4 among it."""
    cap = tmp_path_factory.mktemp("kernel") / "mix.pcap"
    synthesize_mix(cap, seed_frames(sorted(CAPTURES.glob("*.pcapng"))), 12_000, hosts=12, control_percent=3)
    return [(ns, fr) for _, ns, _, _, fr in Reader(cap)]


def _block(endian: str, btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack(endian + "II", btype, n) + body + struct.pack(endian + "I", n)


def _idb(endian: str, tsresol: int | None, tsoffset: int = 0, snap: int = 0) -> bytes:
    opts = b""
    if tsresol is not None:
        opts += struct.pack(endian + "HH", 9, 1) + bytes([tsresol]) + b"\0\0\0"
    if tsoffset:
        opts += struct.pack(endian + "HHq", 14, 8, tsoffset)
    return _block(endian, 1, struct.pack(endian + "HHI", 1, 0, snap) + opts + struct.pack(endian + "HH", 0, 0))


def _vlan(fr: bytes, vid: int) -> bytes:
    return fr[:12] + struct.pack("!HH", 0x8100, vid) + fr[12:]


def write_pcapng(path, frames, endian: str, *, vlan_every: int = 0, snap: int = 0, sections: int = 2) -> None:
    """``frames`` over ``sections`` sections, each with two Ethernet interfaces (nanoseconds; microseconds with
    an offset of -100 s) used alternately, an unknown block among the packets; every ``vlan_every``-th frame
    802.1Q-tagged; frames cut to ``snap`` bytes (their original length kept)."""
    per = -(-len(frames) // sections)
    with open(path, "wb") as f:
        for s in range(sections):
            f.write(_block(endian, 0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1)))
            f.write(_idb(endian, 9))
            f.write(_idb(endian, None, tsoffset=-100))
            for i, (ns, fr) in enumerate(frames[s * per:(s + 1) * per]):
                if vlan_every and i % vlan_every == 0:
                    fr = _vlan(fr, 7)
                orig, data = len(fr), fr[:snap] if snap else fr
                iface = i % 2
                units = ns if iface == 0 else (ns + 100 * 10**9) // 1000
                f.write(_block(endian, 6, struct.pack(endian + "IIIII", iface, units >> 32, units & 0xFFFFFFFF,
                                                      len(data), orig) + data))
                if i == 50:
                    f.write(_block(endian, 0x0BAD, b"a block the reader skips"))


def _ns_exact(frames):
    """Frames whose time survives the microsecond interface (the synthetic mix is 100 us apart)."""
    return [(ns - ns % 1000, fr) for ns, fr in frames]


@pytest.mark.parametrize("endian", ["<", ">"])
def test_the_kernel_counts_pcapng_in_both_byte_orders_as_the_deep_path_does(mix_frames, endian, tmp_path):
    cap = tmp_path / "mix.pcapng"
    write_pcapng(cap, _ns_exact(mix_frames), endian)
    _, some = both(cap)
    assert some["deep_frames"] < 0.1 * some["packets"], "the kernel should count the payload frames"


def test_the_kernel_counts_vlan_tagged_frames_as_the_deep_path_does(mix_frames, tmp_path):
    cap = tmp_path / "vlan.pcapng"
    write_pcapng(cap, _ns_exact(mix_frames), "<", vlan_every=3)
    _, some = both(cap)
    assert some["deep_frames"] < 0.15 * some["packets"]


def test_frames_cut_by_a_snaplen_go_deep_and_give_the_same_findings(mix_frames, tmp_path):
    cap = tmp_path / "snap.pcapng"
    write_pcapng(cap, _ns_exact(mix_frames), ">", snap=80)
    _, some = both(cap)
    # a cut segment's checksum cannot be verified: those frames are the dissector's (as tshark's "2")
    assert some["deep_frames"] > 0.5 * some["packets"]


@pytest.mark.parametrize("chunk", [4096, 65536])
def test_the_kernel_in_a_parallel_read_of_a_pcapng_gives_the_serial_audit(mix_frames, chunk, tmp_path):
    cap = tmp_path / "par.pcapng"
    write_pcapng(cap, _ns_exact(mix_frames), "<", vlan_every=5)
    serial, par = Audit(), Audit()
    read_into(serial, cap)
    counts = read_into(par, cap, jobs=2, chunk_bytes=chunk)
    assert counts["workers"] == 2 and counts["chunks_merged"] >= 3
    assert state(par) == state(serial) and findings(par) == findings(serial)


def test_without_a_compiler_the_audit_runs_on_the_deep_path_and_says_so_once(mix_frames, tmp_path, monkeypatch,
                                                                            capsys):
    cap = tmp_path / "mix.pcapng"
    write_pcapng(cap, _ns_exact(mix_frames[:3000]), "<")
    monkeypatch.setattr(kernel, "_lib", None)
    monkeypatch.setattr(kernel, "_why", None)
    monkeypatch.setattr(kernel, "BUILD", tmp_path / "build")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    plain, again = Audit(), Audit()
    counts = read_into(plain, cap)
    read_into(again, cap)
    assert counts["deep_frames"] == counts["packets"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "counting kernel is unavailable" in err[0] and "no C compiler" in err[0], err
    monkeypatch.undo()
    fast = Audit()
    read_into(fast, cap)
    assert state(fast) == state(plain)


def test_the_kernel_s_window_bounds_are_python_s_float_comparisons():
    rng = random.Random(8925)
    for _ in range(20_000):
        t = rng.uniform(1.6e9, 1.9e9) + rng.choice((0.0, 0.5, 1e-9, 0.1234567891))
        n = _ns_after(t)
        assert n / 1_000_000_000 > t >= (n - 1) / 1_000_000_000
    for t in (0.0, 300.0, 1_700_000_000.0001):
        n = _ns_after(t)
        assert n / 1_000_000_000 > t >= (n - 1) / 1_000_000_000
    assert _ns_after(float("inf")) == I64_MAX and _ns_after(float("-inf")) == I64_MIN


def test_random_captures_through_the_kernel_under_sanitizers(tmp_path):
    """scankernel_fuzz.c: 50,000 rounds of random, damaged and cut frames in pcap and pcapng buffers that
    end where their records end, with the kernel built under AddressSanitizer and UBSan: no read past a
    frame or buffer, no undefined arithmetic, and every path taken (counted, deep, sync, promote, stop)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (tools/setup installs gcc)")
    exe = tmp_path / "scankernel_fuzz"
    built = subprocess.run([cc, "-O1", "-g", "-std=gnu11", "-fsanitize=address,undefined",
                            "-fno-sanitize-recover=all", "-o", str(exe), str(Path(__file__).with_name("scankernel_fuzz.c"))],
                           capture_output=True, text=True, timeout=120)
    if built.returncode and "asan" in built.stderr.lower():
        pytest.skip(f"{cc} cannot build with AddressSanitizer here: {built.stderr.strip()[-200:]}")
    assert built.returncode == 0, built.stderr
    done = subprocess.run([str(exe), "50000", "8925"], capture_output=True, text=True, timeout=300,
                          env={"ASAN_OPTIONS": "detect_leaks=0", "PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr[-3000:]
    seen = dict(zip(*[iter(done.stdout.split())] * 2, strict=True))
    for path in ("counted", "deep", "sync", "promote", "stops"):
        assert int(seen[path]) > 100, f"the fuzz never reached '{path}': {done.stdout}"
