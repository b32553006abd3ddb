"""Asset classes in OMB M-21-07 terms, from what captures show each host
do, and the per-host evidence behind them as a record that merges exactly
across captures (docs/v6only.md, "Asset classes").

The evidence is counted by the per-host rules (``hosts.Host``: the C
engine and the Python path hold the same state, compared field by field
by ``tests/unit/test_audit_engine.py``); a host's record keeps, for each
signal, how many frames showed it and the first of them (its time, its
capture and its frame number there), so an auditor can open the frame
that proves a class.

Records merge with ``merge_hosts``: sums, minima and maxima, the first
frame of the captures taken in the order they started, a bounded union of addresses taken in sorted order, the worst
readiness verdict, the failing findings (each with the first capture, by
name, it failed in).  Each is associative and commutative, so shards
of an audit merge in any grouping and any order into the same record.
"""

from __future__ import annotations

from ..net import v6only as V
from .findings import judge_host
from .hosts import MAX_ADDRESSES, Audit, Host

IPV6_ONLY, CAPABLE, DUAL, IPV4_ONLY, UNKNOWN = "ipv6-only", "ipv6-only-capable", "dual-stack", "ipv4-only", "unknown"
CLASSES = (IPV6_ONLY, CAPABLE, DUAL, IPV4_ONLY, UNKNOWN)
TITLES = {IPV6_ONLY: "IPv6-only", CAPABLE: "IPv6-only-capable", DUAL: "dual-stack", IPV4_ONLY: "IPv4-only",
          UNKNOWN: "unknown (seen too little)"}
#: the signals a record counts; the first three are IPv4 the host depends on
DEPENDS_ON_IPV4 = ("arp", "ipv4", "dhcpv4")
SIGNALS = ("ipv6", *DEPENDS_ON_IPV4, "dhcpv4_108", "offer_108", "clat")
SIGNAL_TITLES = {"ipv6": "IPv6", "arp": "ARP", "ipv4": "IPv4", "dhcpv4": "DHCPv4 without option 108",
                 "dhcpv4_108": "DHCPv4 asking for option 108 (RFC 8925)",
                 "offer_108": "DHCPOFFER with option 108 to the host", "clat": "ipv4only.arpa query (CLAT, RFC 7050)"}
#: an OFFER count is the host's offers_108 (its first 8): kept saturated so that sums stay exact
MAX_OFFERS = 8
#: a finding's verdicts from best to worst: a merge keeps the worst
RANK = {"SKIP": 0, "PASS": 1, "FAIL": 2}
MIN_FRAMES = 3  # the default of a plan's min_frames


def _signal(seen, start: float, capture: str) -> list | None:
    """[count, the capture's start, capture, frame, time, what] of a ``hosts.Seen``, None when it counted
    nothing."""
    if not seen or not seen.count:
        return None
    return [seen.count, start, capture, seen.first_frame, seen.first_time, seen.first]


def host_record(audit: Audit, h: Host, capture: str, findings: bool = True, judged: list | None = None) -> dict:
    """What one capture shows of ``h``, as a mergeable record (JSON types only); ``judged``: its findings,
    when the caller judged them already."""
    kinds, t0 = h.kinds, audit.t0
    sig = {"ipv6": _signal(h.ipv6, t0, capture), "arp": _signal(kinds.get(V.ARP), t0, capture),
           "ipv4": _signal(kinds.get(V.IPV4), t0, capture), "dhcpv4": _signal(kinds.get(V.DHCPV4), t0, capture),
           "dhcpv4_108": _signal(kinds.get(V.DHCPV4_RFC8925), t0, capture), "clat": _signal(h.clat, t0, capture)}
    if h.offers_108:
        t, frame, yiaddr, server, value = h.offers_108[0]
        shown = "unknown" if value is None else f"{value} s"
        sig["offer_108"] = [min(MAX_OFFERS, len(h.offers_108)), t0, capture, frame, t,
                            f"DHCPOFFER of {yiaddr} from {server} with option 108 ({shown})"]
    rec = {"frames": h.frames, "bytes": h.bytes, "first_t": h.first_time, "last_t": h.last_time,
           "signals": {k: v for k, v in sig.items() if v},
           "v4": sorted(h.ipv4_addrs)[:MAX_ADDRESSES], "v6": sorted(h.ipv6_addrs)[:MAX_ADDRESSES], "captures": 1}
    if findings:
        judged = judged or judge_host(audit, h)
        ready = judged[-1]  # findings.READY: the host's readiness over its findings
        rec["ready"] = [ready.verdict, capture, ready.seen]
        rec["failing"] = {j.finding.id: [capture, j.seen] for j in judged[:-1] if j.verdict == "FAIL"}
    return rec


def _first(a: list, b: list) -> list:
    """The signal of two records: counts summed, the first frame of the captures in the order they started
    (then by name), as it is first in their concatenation in that order, whatever the times inside them."""
    first = a if (a[1], a[2], a[3]) <= (b[1], b[2], b[3]) else b
    return [a[0] + b[0], *first[1:]]


def _worse(a: list, b: list) -> list:
    """The worse of two readiness verdicts ([verdict, capture, seen]); a tie: the smaller capture, then seen."""
    ka, kb = (-RANK.get(a[0], 0), a[1], a[2]), (-RANK.get(b[0], 0), b[1], b[2])
    return a if ka <= kb else b


def merge_hosts(a: dict, b: dict) -> dict:
    """The record of a host seen in the captures of ``a`` and of ``b`` (neither is changed)."""
    sig = dict(a["signals"])
    for k, v in b["signals"].items():
        sig[k] = _first(sig[k], v) if k in sig else v
    if "offer_108" in sig:
        sig["offer_108"] = [min(MAX_OFFERS, sig["offer_108"][0]), *sig["offer_108"][1:]]
    out = {"frames": a["frames"] + b["frames"], "bytes": a["bytes"] + b["bytes"],
           "first_t": min(a["first_t"], b["first_t"]), "last_t": max(a["last_t"], b["last_t"]),
           "signals": {k: sig[k] for k in SIGNALS if k in sig},
           "v4": sorted(set(a["v4"]) | set(b["v4"]))[:MAX_ADDRESSES],
           "v6": sorted(set(a["v6"]) | set(b["v6"]))[:MAX_ADDRESSES],
           "captures": a["captures"] + b["captures"]}
    if "ready" in a or "ready" in b:
        out["ready"] = _worse(a["ready"], b["ready"]) if "ready" in a and "ready" in b else a.get("ready") or b["ready"]
        fa, fb = a.get("failing", {}), b.get("failing", {})
        out["failing"] = {k: min(fa[k], fb[k]) if k in fa and k in fb else fa.get(k) or fb[k]
                          for k in sorted(set(fa) | set(fb))}
    return out


def classify(rec: dict, min_frames: int = MIN_FRAMES) -> tuple[str, str, list[str]]:
    """(class, why, the signals that prove it) of a record (docs/v6only.md, "Asset classes"):

    - unknown: fewer than ``min_frames`` IPv6, ARP, IPv4 and DHCPv4 frames from it;
    - IPv4-only: no IPv6 frame;
    - IPv6-only: IPv6, and no IPv4 it depends on (ARP, IPv4, DHCPv4 without option 108): DHCPv4 asking for
      option 108 is what an IPv6-only host sends on an IPv6-mostly link (RFC 8925 §3.2);
    - IPv6-only-capable: IPv6 and IPv4, and it asks for option 108 or runs a CLAT (ipv4only.arpa, RFC 7050):
      it would run IPv6-only where the network lets it;
    - dual-stack: IPv6 and IPv4, neither sign."""
    n = {k: v[0] for k, v in rec["signals"].items() if v}  # (each signal's count, looked up once)
    v6 = n.get("ipv6", 0)
    v4 = sum(n.get(k, 0) for k in DEPENDS_ON_IPV4)
    ask, clat = n.get("dhcpv4_108", 0), n.get("clat", 0)
    seen = v6 + v4 + ask
    dep = [k for k in DEPENDS_ON_IPV4 if n.get(k)]
    signs = [k for k in ("dhcpv4_108", "clat") if n.get(k)]
    if seen < min_frames:
        return UNKNOWN, f"{seen} IPv6/IPv4 frames, fewer than {min_frames}", sorted(rec["signals"])
    if not v6:
        return IPV4_ONLY, f"no IPv6 in {seen} IPv6/IPv4 frames", dep + signs
    if not v4:
        extra = f"; {ask} DHCPv4 messages asking for option 108 (allowed, RFC 8925 §3.2)" if ask else ""
        return IPV6_ONLY, f"{v6} IPv6 frames, no ARP, IPv4 or DHCPv4 without option 108{extra}", \
            ["ipv6", *signs, *(["offer_108"] if n.get("offer_108") else [])]
    if signs:
        return CAPABLE, (f"{v6} IPv6 and {v4} IPv4 frames; " + " and ".join(
            {"dhcpv4_108": f"asks for option 108 ({ask})", "clat": f"runs a CLAT ({clat} ipv4only.arpa queries)"}[s]
            for s in signs)), ["ipv6", *dep, *signs]
    return DUAL, f"{v6} IPv6 and {v4} IPv4 frames, no option 108 asked, no CLAT", ["ipv6", *dep]
