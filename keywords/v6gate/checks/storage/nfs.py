"""NFSv3 over IPv6: what rpcbind tells clients (RFC 1833 v3/v4 DUMP,
netids and universal addresses of RFC 5665)."""

from __future__ import annotations

import ipaddress
import re

from ...core.check import check
from . import _client as C

NFS_PROG, MOUNT_PROG = 100003, 100005
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)")


def parse_rpcinfo(text: str) -> list[dict]:
    """``rpcinfo HOST`` (rpcbind v4/v3 DUMP) rows: program, version, netid, uaddr."""
    rows = []
    for line in text.splitlines():
        m = _ROW.match(line)
        if m:
            rows.append({"prog": int(m.group(1)), "vers": int(m.group(2)), "netid": m.group(3),
                         "uaddr": m.group(4)})
    return rows


def uaddr_problem(netid: str, uaddr: str) -> str | None:
    """RFC 5665 §5.2.3.3-4: tcp6/udp6 universal address = IPv6 text + '.p1.p2' (port octets)."""
    head, _, p2 = uaddr.rpartition(".")
    addr, _, p1 = head.rpartition(".")
    if not (p1.isdigit() and p2.isdigit() and int(p1) < 256 and int(p2) < 256):
        return f"{netid} {uaddr}: the port octets are not two decimal numbers 0..255 (RFC 5665 §5.2.3.4)"
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return f"{netid} {uaddr}: {addr!r} is not an address"
    if ip.version != 6:
        return f"{netid} {uaddr}: an IPv4 address under an IPv6 netid"
    if not ip.is_unspecified:
        bad = C.classify(addr)
        if bad:
            return f"{netid} {uaddr}: {bad}"
    return None


def judge_registrations(rows: list[dict], versions: list[int]) -> tuple[list[str], dict]:
    problems, seen = [], {}
    for prog, name in ((NFS_PROG, "NFS"), (MOUNT_PROG, "MOUNT")):
        v6 = [r for r in rows if r["prog"] == prog and r["netid"] in ("tcp6", "udp6")]
        v4 = [r for r in rows if r["prog"] == prog and r["netid"] in ("tcp", "udp")]
        seen[name] = sorted({f"v{r['vers']}/{r['netid']}" for r in v6 + v4})
        wanted = [v for v in versions if prog == NFS_PROG] or ([3] if prog == MOUNT_PROG and 3 in versions else [])
        for v in wanted:
            if not [r for r in v6 if r["vers"] == v and r["netid"] == "tcp6"]:
                have = sorted({r["netid"] for r in rows if r["prog"] == prog and r["vers"] == v}) or ["nothing"]
                problems.append(f"{name} v{v} has no tcp6 registration (registered: {', '.join(have)})")
        for r in v6:
            p = uaddr_problem(r["netid"], r["uaddr"])
            if p:
                problems.append(f"{name} v{r['vers']} {p}")
    return problems, seen


@check(
    area="storage", ipv6ready=None,
    title="NFSv3: rpcbind registers NFS and MOUNT on tcp6/udp6 with valid universal addresses",
    rfc="RFC 5665 §5.2.3.3-4 (netids tcp6/udp6, IPv6 universal addresses); RFC 1833 §2.2 (rpcbind v3/v4 DUMP); "
        "RFC 1813 §2 (NFSv3), Appendix I (MOUNT)",
    expect="an rpcbind DUMP over IPv6 lists NFS v3 and MOUNT v3 with netid tcp6 (udp6 optional), each "
           "universal address an IPv6 address (not link-local or loopback) followed by two port octets",
    fault="dut_nfs_registers_only_ipv4_transports",
    capabilities=["NFS"], dut_config="storage",
)
def rpcbind_registrations_are_ipv6(t):
    """An NFSv3 client asks rpcbind where NFS and MOUNT listen; on an
    IPv6-only link only tcp6/udp6 registrations are usable, and their
    universal addresses must parse (RFC 5665) or the client cannot
    connect."""
    svc = C.service(t, "NFS")
    versions = [int(str(v).split(".")[0]) for v in svc.get("versions", ["3", "4"])]
    if 3 not in versions:
        raise C.NotApplicable("the target's NFS service does not offer NFSv3 (services[].versions)")
    dut = C.dut_address(t)
    cl = C.client(t)
    since = t.port.now()
    rc, out, err = cl.run(["rpcinfo", dut], max(10.0, 5 * t.reply_timeout))
    rows = parse_rpcinfo(out)
    t.measure("rpcbind_dump", rows)
    if rc != 0 or not rows:
        detail = (err.strip() or out.strip() or "no output").splitlines()[-1][:200]
        return t.failed(f"rpcbind DUMP over IPv6 to [{dut}]:111 failed ({'timed out' if rc is None else detail}); "
                        f"{C.dut_frames_summary(t, since, dut)}")
    problems, seen = judge_registrations(rows, [v for v in versions if v == 3])
    summary = "; ".join(f"{k}: {', '.join(v) or 'none'}" for k, v in seen.items())
    if problems:
        return t.failed("; ".join(problems) + f" ({summary})")
    return t.passed(f"rpcbind over IPv6 lists {summary}; every IPv6 universal address is valid")
