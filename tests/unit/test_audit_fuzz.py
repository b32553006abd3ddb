"""Fuzzed captures (issue 15): the audit survives 10,000 mutated captures
(byte flips, truncations, bogus lengths in pcap/pcapng record and block
headers, in IPv6 payload and extension-header lengths, ICMPv6 option
lengths, DHCPv6 option lengths, DNS counts) without a crash and in bounded
memory: each ends in findings or in one UsageError line (exit 2 from the
CLI), never a traceback; the findings on the unmutated fixtures are the
same before and after.  In-process and seeded, so a failure names the
mutant that caused it and can be replayed."""

import json
import random
import resource
import struct
import subprocess
import sys
import time

from v6gate.audit.fast import read_into
from v6gate.audit.findings import judge_host
from v6gate.audit.fixtures import CAPTURES
from v6gate.audit.hosts import Audit
from v6gate.audit.pcapread import Reader
from v6gate.errors import UsageError
from v6gate.paths import ROOT

MUTANTS = 10_000
SEED = 15
#: the fixtures up to this many frames (the v6only-host capture has 226; its first 60 hold every kind of frame
#: the others have too), so that 10,000 audits take seconds, not minutes
MAX_FRAMES = 60


def _pcap(frames) -> bytes:
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for ns, orig, fr in frames:
        out.append(struct.pack("<IIII", ns // 10**9, ns % 10**9 // 1000, len(fr), orig) + fr)
    return b"".join(out)


def bases() -> list[tuple[str, bytes, list]]:
    """(name, capture bytes, [(record offset, frame offset, frame length)]) of the seed captures:
    the fixtures as pcapng (their first MAX_FRAMES frames) and as classic pcap."""
    out = []
    for p in sorted(CAPTURES.glob("*.pcapng")):
        data = p.read_bytes()
        frames = list(Reader(p))[:MAX_FRAMES]
        end = frames[-1][0] + struct.unpack_from("<I", data, frames[-1][0] + 4)[0]
        recs = [(off, off + 28, len(fr)) for off, _, _, _, fr in frames]  # EPB: data at +28
        out.append((p.stem + ".pcapng", data[:end], recs))
        pcap = _pcap([(ns, orig, fr) for _, ns, orig, _, fr in frames])
        recs, off = [], 24
        for _, _, _, _, fr in frames:
            recs.append((off, off + 16, len(fr)))
            off += 16 + len(fr)
        out.append((p.stem + ".pcap", pcap, recs))
    return out


def _put16(b: bytearray, at: int, value: int) -> None:
    if at >= 0 and at + 2 <= len(b):
        b[at:at + 2] = struct.pack("!H", value & 0xFFFF)


def mutate(rng: random.Random, data: bytes, recs: list, pcapng: bool) -> tuple[str, bytes]:
    b = bytearray(data)
    rec, fstart, flen = rng.choice(recs)
    kind = rng.choice(("flip", "flip", "truncate", "record_length", "ipv6_length", "ext_length", "icmpv6_option",
                       "dhcpv6_option", "dns_counts", "frame_bytes"))
    big = rng.choice((0, 1, 3, 7, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, rng.getrandbits(32)))
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        del b[rng.randrange(len(b)):]
    elif kind == "record_length":  # pcap incl_len / orig_len, or a pcapng block length, EPB caplen, a header length
        where = rng.choice((rec + 4, rec + 8, rec + 12, rec + 20, rec + 24, 4, 8, 12, 16, 20) if pcapng else
                           (rec + 8, rec + 12, 16, 20))
        if where + 4 <= len(b):
            b[where:where + 4] = struct.pack("<I", big)
    elif kind == "ipv6_length":  # payload length of the (first) IPv6 header
        _put16(b, fstart + 14 + 4, big)
    elif kind == "ext_length":  # next header and the extension header's own length
        if rng.random() < 0.5:
            b[fstart + 14 + 6] = rng.choice((0, 43, 44, 51, 58, 60, 59, 6, 17, rng.randrange(256)))
        if fstart + 14 + 41 < len(b):
            b[fstart + 14 + 41] = rng.randrange(256)
    elif kind == "icmpv6_option":  # an option length byte somewhere after the fixed ND header
        at = fstart + 14 + 40 + rng.choice((8, 16, 24, 32, 40, 48, 56)) + 8 * rng.randrange(4) + 1
        if at < fstart + flen:
            b[at] = rng.choice((0, 1, 2, 3, 0xFF, rng.randrange(256)))
    elif kind == "dhcpv6_option":  # option-len of an option in a UDP payload
        at = fstart + 14 + 40 + 8 + 4 + 2 + 4 * rng.randrange(6)
        _put16(b, at, big)
    elif kind == "dns_counts":  # QD/AN/NS/AR counts of a DNS message
        at = fstart + 14 + rng.choice((20, 40)) + 8 + 4 + 2 * rng.randrange(4)
        _put16(b, at, big)
    else:  # random bytes over a frame's headers
        for _ in range(rng.randint(1, 6)):
            at = fstart + rng.randrange(max(1, min(flen, 120)))
            if at < len(b):
                b[at] = rng.randrange(256)
    return kind, bytes(b)


def audit_file(path) -> str:
    """What ``v6gate audit`` decides, without writing a report: findings per host, or the UsageError line."""
    try:
        audit = Audit()
        read_into(audit, path)
        if not audit.hosts:
            return "usage: no hosts"
        return json.dumps({m: [(j.finding.id, j.verdict, j.seen) for j in judge_host(audit, h)]
                           for m, h in sorted(audit.hosts.items())})
    except UsageError as exc:
        line = str(exc)
        assert line and "\n" not in line, f"a usage error of more than one line: {line!r}"
        return "usage: " + line


def test_ten_thousand_mutated_captures_give_findings_or_one_line_never_a_crash(tmp_path):
    seeds = bases()
    before = {name: audit_file(_write(tmp_path / name, data)) for name, data, _ in seeds}
    rng = random.Random(SEED)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kinds: dict[str, int] = {}
    outcomes = {"findings": 0, "usage error": 0}
    t0 = time.monotonic()
    target = tmp_path / "mutant"
    for i in range(MUTANTS):
        name, data, recs = seeds[i % len(seeds)]
        kind, mutant = mutate(rng, data, recs, name.endswith(".pcapng"))
        kinds[kind] = kinds.get(kind, 0) + 1
        target.write_bytes(mutant)
        try:
            got = audit_file(target)
        except Exception as exc:  # a crash: name the mutant so it can be replayed
            crash = tmp_path / f"crash-{i}-{kind}-{name}"
            crash.write_bytes(mutant)
            raise AssertionError(f"mutant {i} ({kind} of {name}, seed {SEED}) crashed the audit: "
                                 f"{type(exc).__name__}: {exc}; kept as {crash}") from exc
        outcomes["usage error" if got.startswith("usage: ") else "findings"] += 1
    elapsed = time.monotonic() - t0
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    print(f"\nfuzz: {MUTANTS} mutated captures in {elapsed:.1f} s, 0 crashes, {outcomes}, mutations {kinds}, "
          f"peak RSS grew {grown_mib:.1f} MiB (to {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")
    assert outcomes["findings"] > MUTANTS // 4 and outcomes["usage error"] > MUTANTS // 20, outcomes
    assert grown_mib < 64, f"memory grew by {grown_mib:.0f} MiB over {MUTANTS} captures"
    after = {name: audit_file(tmp_path / name) for name, _, _ in seeds}
    assert after == before, "auditing mutants changed the findings on the unmutated captures"


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_corrupt_captures_from_the_cli_are_one_line_with_exit_2(tmp_path):
    """The same damage through ``v6gate audit``: exit 2 and one line on stderr, no traceback, no report."""
    _, data, recs = bases()[1]  # a classic pcap
    rng = random.Random(SEED)
    cases = {"cut": data[:recs[3][1] + 5], "huge record": bytearray(data)}
    struct.pack_into("<I", cases["huge record"], recs[2][0] + 8, 0x7FFFFFFF)
    ng = (CAPTURES / "dad-skipped.pcapng").read_bytes()
    shb = struct.unpack_from("<I", ng, 4)[0]  # the interface block after the section header: a length of 13
    cases["pcapng block length"] = ng[:shb + 4] + struct.pack("<I", 13) + ng[shb + 8:]
    cases["bad magic"] = b"\x0a\x0d\x0d\x0a" + bytes(rng.randrange(256) for _ in range(40))
    for what, content in cases.items():
        path = _write(tmp_path / f"{what.replace(' ', '-')}.pcap", bytes(content))
        cp = subprocess.run([sys.executable, "-m", "v6gate.cli", "audit", str(path), "--out", str(tmp_path / what)],
                            capture_output=True, text=True, cwd=ROOT)
        assert cp.returncode == 2, (what, cp.returncode, cp.stderr)
        assert len(cp.stderr.strip().splitlines()) == 1 and "Traceback" not in cp.stderr, (what, cp.stderr)
        assert not (tmp_path / what / "results.json").exists()
