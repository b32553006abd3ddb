"""NFS over IPv6: what rpcbind tells NFSv3 clients (RFC 1833 v3/v4 DUMP,
netids and universal addresses of RFC 5665), and where an NFSv4 referral
sends them (fs_locations, RFC 7530 §8.4-8.5)."""

from __future__ import annotations

import ipaddress
import re

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...scenario import storage as C

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
def rpcbind_registrations_are_ipv6(t: CheckContext):
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
    since = t.now()
    rc, out, err = cl.run(["rpcinfo", dut], max(10.0, 5 * t.reply_timeout))
    rows = parse_rpcinfo(out)
    t.measure("rpcbind_dump", rows)
    if rc != 0 or not rows:
        detail = (err.strip() or out.strip() or "no output").splitlines()[-1][:200]
        raise Deviation(f"rpcbind DUMP over IPv6 to [{dut}]:111 failed ({'timed out' if rc is None else detail}); "
                         f"{C.dut_frames_summary(t, since, dut)}")
    problems, seen = judge_registrations(rows, [v for v in versions if v == 3])
    summary = "; ".join(f"{k}: {', '.join(v) or 'none'}" for k, v in seen.items())
    if problems:
        raise Deviation("; ".join(problems) + f" ({summary})")
    return t.conclude(f"rpcbind over IPv6 lists {summary}; every IPv6 universal address is valid", [])


def judge_locations(fsl: dict | None, link_is_global: bool = True) -> list[str]:
    """What is wrong with a referral's fs_locations for an IPv6-only link:
    there must be a location, and every server must be a name or a global
    IPv6 literal (RFC 5952 text; brackets and zones are not part of it)."""
    if not fsl or not fsl.get("locations"):
        return ["the referral's fs_locations name no location (a client has nowhere to go, RFC 7530 §8.4.3)"]
    problems = []
    for i, loc in enumerate(fsl["locations"]):
        if not loc.get("servers"):
            problems.append(f"location {i} ({loc.get('rootpath')}) names no server")
        for server in loc.get("servers", []):
            host, _, zone = server.strip("[]").partition("%")
            try:
                ipaddress.ip_address(host)
            except ValueError:
                continue  # a name: resolved by the client, over DNS (AAAA)
            bad = C.classify(host, link_is_global)
            if bad:
                problems.append(f"location {i}: server {server!r} is {bad}")
            elif zone:
                problems.append(f"location {i}: server {server!r} carries a zone (%{zone}), local to the server")
            elif server.startswith("["):
                problems.append(f"location {i}: server {server!r} is bracketed: an IPv6 literal is RFC 5952 text")
    return problems


@check(
    area="storage", ipv6ready=None,
    title="An NFSv4 referral's fs_locations name only servers reachable over IPv6",
    rfc="RFC 7530 §8.4.3 (referrals: fs_locations tell the client where the file system is), §8.5 (fs_location4: "
        "server names or address literals, rootpath); RFC 5661 §11.9 (NFSv4.1); RFC 5952 (IPv6 text)",
    expect="PUTROOTFH, LOOKUP of the declared referral and GETATTR(fs_locations, fsid) over IPv6 succeed; every "
           "location names a server that is a DNS name or a global IPv6 literal: none IPv4, link-local, "
           "loopback, zoned or bracketed",
    parts=[
        Part("A", "fs_locations of the referral (control: a referral to an IPv4 server)",
             fault="dut_nfs_refers_to_ipv4_server"),
        Part("B", "fs_locations of the referral (control: a referral to a link-local server)",
             fault="dut_nfs_refers_to_link_local_server"),
    ],
    capabilities=["NFS"], dut_config="storage-vm", liveness=None,
)
def referral_locations_are_ipv6(t: CheckContext):
    """A referral is how an NFSv4 server sends a client to the server that
    holds a file system (a migrated or federated export).  On an IPv6-only
    network a location naming an IPv4 server cannot be followed, nor a
    link-local one from off the link: the client's LOOKUP ends there."""
    addr, svc, port, cl = C.endpoint(t, "NFS", having="referral")
    path = svc["referral"]
    answer, since = C.ask(t, cl, "v6gate.net.nfs4", ["fs_locations", addr, str(port), path], "NFSv4 client")
    if "error" in answer:
        raise C.speaker_error(answer, f"NFSv4 COMPOUND to [{addr}]:{port} failed: {answer['error']}; "
                                      f"{C.dut_frames_summary(t, since, addr)}")
    t.measure("compound", answer)
    ops = ", ".join(f"{o['op']}:{o['status']}" for o in answer["ops"])
    if answer["status"] != "NFS4_OK":
        raise Deviation(f"PUTROOTFH, LOOKUP {path}, GETATTR(fs_locations) on [{addr}]:{port} ended "
                         f"{answer['status']} (operations {ops}): the declared referral's locations cannot be read")
    fsl = answer["attrs"].get("fs_locations")
    problems = judge_locations(fsl)
    if problems:
        raise Deviation("; ".join(problems) + f" (fs_locations of {path} on [{addr}]:{port}: {fsl})")
    shown = "; ".join(f"server {', '.join(loc['servers'])} path {loc['rootpath']}" for loc in fsl["locations"])
    return t.conclude(f"fs_locations of {path} (fs_root {fsl['fs_root']}) over IPv6: {shown}", [])
