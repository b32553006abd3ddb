"""The readiness verdicts of one host, from what the capture shows.

Each finding is the passive counterpart of an active check of area
v6only (named in ``ACTIVE``) and uses the same rules.  A finding the
capture cannot decide (no DHCPv4 from the host, no DNS query) is SKIP with
the reason, never a PASS.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..net import v6only as V
from .hosts import Audit, Host


@dataclass(frozen=True)
class Finding:
    id: str
    title: str
    rfc: str
    expect: str


@dataclass
class Judged:
    finding: Finding
    verdict: str
    seen: str
    measurements: dict = field(default_factory=dict)


NO_IPV4 = Finding("audit.host_sends_no_ipv4", "No IPv4 from the host",
                  "RFC 8925 §3.2 (DHCPv4 on an IPv6-only link); RFC 6540 §2; IPv6-only operation (OMB M-21-07)",
                  "no ARP, no IPv4 packet and no DHCPv4 from the host except DHCPDISCOVER/DHCPREQUEST asking for "
                  "option 108 (RFC 8925 §3.2)")
ASKS_108 = Finding("audit.dhcpv4_asks_for_option_108", "DHCPv4 asks for the IPv6-Only Preferred option",
                   "RFC 8925 §3.2",
                   "every DHCPDISCOVER and DHCPREQUEST of the host carries 108 in its Parameter Request List")
STOPS_108 = Finding("audit.dhcpv4_stops_after_option_108", "DHCPv4 stops after an OFFER with option 108",
                    "RFC 8925 §3.2",
                    "after a DHCPOFFER carrying option 108, no DHCPREQUEST, DHCPv4, ARP or IPv4 from the host for "
                    "V6ONLY_WAIT (the option's value, at least 300 s)")
DNS6 = Finding("audit.dns_over_ipv6", "DNS queries over IPv6, asking for AAAA",
               "RFC 8106 §5.3.1; RFC 3596 §2.1; IPv6-only operation (OMB M-21-07)",
               "the host's DNS queries go to resolvers over IPv6, never over IPv4, and ask for AAAA records")
ND = Finding("audit.nd_behaviour", "Neighbor Discovery on the wire", "RFC 4861 §6.1.1, §7.1.1; RFC 4862 §5.4",
             "every ND message of the host has hop limit 255 (RFC 4861), and it runs Duplicate Address Detection "
             "before using an address (RFC 4862 §5.4) where its start-up is on the capture")
CHECKSUMS = Finding("audit.checksums", "Valid checksums", "RFC 8200 §8.1; RFC 791 §3.1; RFC 768",
                    "no IPv4 header, TCP, UDP or ICMPv6 checksum error in the host's frames")
RA = Finding("audit.router_advertises_dns_and_nat64_prefix", "Router Advertisements carry resolvers and the NAT64 prefix",
             "RFC 8106 §5.1 (RDNSS); RFC 8781 §4 (PREF64); RFC 4861 §4.2 (O flag)",
             "the router's RAs give hosts an IPv6 resolver (RDNSS, or O=1 for stateless DHCPv6) and, for an "
             "IPv6-only link, the NAT64 prefix (PREF64)")
SELECTION = Finding("audit.ipv6_preferred_for_dual_stack_names", "IPv6 tried first for names with AAAA and A records",
                    "RFC 6724 §6 rule 6 and §2.1 default policy table; RFC 8305 §4",
                    "the host's first connection to a name that resolved to both AAAA and A records goes to the IPv6 "
                    "address")
READY = Finding("audit.ipv6_only_readiness", "IPv6-only readiness (all findings for the host)",
                "RFC 8925 §3.2; RFC 6540 §2; IPv6-only operation (OMB M-21-07)",
                "no finding for the host FAILs: no IPv4 dependence, RFC 8925 followed where DHCPv4 shows, DNS over "
                "IPv6, conforming ND, valid checksums")

#: the active check each finding corresponds to (the same rule, observed instead of provoked)
ACTIVE = {
    NO_IPV4.id: "v6only.host_sends_no_ipv4_on_an_ipv6_only_link",
    ASKS_108.id: "v6only.ipv6_only_preferred_option_stops_dhcpv4#request",
    STOPS_108.id: "v6only.ipv6_only_preferred_option_stops_dhcpv4#offer",
    DNS6.id: "v6only.names_are_resolved_over_ipv6",
    ND.id: "slaac.link_local_address_is_probed_before_use",
    SELECTION.id: "v6only.ipv6_is_preferred_for_a_dual_stack_name",
}


def _rel(audit: Audit, t: float | None) -> str:
    return f"+{t - audit.t0:.3f} s" if t is not None and audit.t0 is not None else "?"


def _seen(audit: Audit, s) -> str:
    return f"{s.count} (first at {_rel(audit, s.first_time)}, frame {s.first_frame}: {s.first})"


def judge_host(audit: Audit, h: Host) -> list[Judged]:
    out = [_no_ipv4(audit, h), _asks_108(audit, h), _stops_108(audit, h), _dns(audit, h), _selection(audit, h),
           _nd(audit, h), _checksums(audit, h)]
    if h.ra.count:
        out.append(_ra(audit, h))
    out.append(_readiness(audit, h, out))
    return out


def ipv6_share(h: Host) -> float | None:
    ip = h.v6_frames + h.v4_frames
    return round(100.0 * h.v6_frames / ip, 2) if ip else None


def _no_ipv4(audit, h) -> Judged:
    bad = {k: s for k, s in h.kinds.items() if not V.allowed_on_ipv6_only_link(k)}
    allowed = h.kinds.get(V.DHCPV4_RFC8925)
    m = {"ipv4_frames": {k: s.as_dict(audit.t0) for k, s in h.kinds.items()}, "ipv4_addresses": h.ipv4_addrs}
    note = f"; allowed by RFC 8925: {allowed.count} DHCPv4 messages asking for option 108" if allowed else ""
    if bad:
        return Judged(NO_IPV4, "FAIL", "; ".join(f"{k}: {_seen(audit, s)}" for k, s in bad.items()) + note, m)
    return Judged(NO_IPV4, "PASS", f"no ARP or IPv4 in {h.frames} frames{note}", m)


def _asks_108(audit, h) -> Judged:
    msgs = {k: s for k, s in h.dhcp_client.items() if k[0] in ("DHCPDISCOVER", "DHCPREQUEST")}
    m = {"dhcpv4": {f"{name}{' with' if w else ' without'} 108": s.as_dict(audit.t0) for (name, w), s in msgs.items()}}
    if not msgs:
        return Judged(ASKS_108, "SKIP", "the host sent no DHCPDISCOVER or DHCPREQUEST on the capture", m)
    without = {k: s for k, s in msgs.items() if not k[1]}
    if without:
        return Judged(ASKS_108, "FAIL", "; ".join(f"{name} without option 108: {_seen(audit, s)}"
                                                  for (name, _), s in without.items()), m)
    return Judged(ASKS_108, "PASS", ", ".join(f"{s.count} {name}" for (name, _), s in msgs.items())
                  + ", all asking for option 108", m)


def _stops_108(audit, h) -> Judged:
    if not h.offers_108:
        return Judged(STOPS_108, "SKIP", "no DHCPOFFER with option 108 for the host on the capture")
    t, frame, yiaddr, server, value = h.offers_108[0]
    shown = "unknown" if value is None else f"{value} s"
    offer = f"DHCPOFFER of {yiaddr} from {server} with option 108 ({shown}) at {_rel(audit, t)}, frame {frame}"
    m = {"offers_with_108": len(h.offers_108), "option_108_s": value,
         "quiet_until_s": round(h.quiet_until - audit.t0, 3)}
    if h.after_offer_108.count:
        return Judged(STOPS_108, "FAIL", f"{offer}; then within V6ONLY_WAIT: {_seen(audit, h.after_offer_108)}", m)
    horizon = min(h.quiet_until, audit.t_last)
    why = ("its interface restarted (a network attachment event)" if h.quiet_ended_by_restart and
           h.quiet_until <= audit.t_last else "the end of V6ONLY_WAIT" if h.quiet_until <= audit.t_last else
           "the end of the capture")
    return Judged(STOPS_108, "PASS", f"{offer}; no DHCPv4, ARP or IPv4 from the host up to {_rel(audit, horizon)} "
                                     f"({why})", m)


def _dns(audit, h) -> Judged:
    resolvers = [{"family": f"IPv{fam}", "resolver": r, "queries": n} for (fam, r), n in sorted(h.dns.items())]
    m = {"dns_resolvers": resolvers, "dns_query_types": h.dns_qtypes}
    if not h.dns:
        return Judged(DNS6, "SKIP", "the host sent no DNS query on the capture", m)
    used = ", ".join(f"{r['resolver']} ({r['family']}, {r['queries']} queries)" for r in resolvers)
    if h.dns_v4.count:
        return Judged(DNS6, "FAIL", f"DNS queries over IPv4: {_seen(audit, h.dns_v4)}; resolvers used: {used}", m)
    if "AAAA" not in h.dns_qtypes:
        return Judged(DNS6, "FAIL", f"queries asked only for {sorted(h.dns_qtypes)}, never AAAA; resolvers: {used}", m)
    return Judged(DNS6, "PASS", f"resolvers used: {used}; query types {h.dns_qtypes}", m)


def _selection(audit, h) -> Judged:
    choices = {n: {"family": f"IPv{fam}", "first_syn_to": dst, "frame": frame}
               for n, (fam, _, frame, dst) in h.first_choice.items()}
    m = {"dual_stack_names": choices}
    if not choices:
        return Judged(SELECTION, "SKIP", "the host connected to no name that resolved to both AAAA and A records", m)
    v4 = {n: c for n, c in choices.items() if c["family"] == "IPv4"}
    if v4:
        return Judged(SELECTION, "FAIL", "; ".join(f"{n}: first SYN to {c['first_syn_to']} (IPv4, frame {c['frame']})"
                                                   for n, c in list(v4.items())[:4])
                      + f" ({len(v4)} of {len(choices)} dual-stack names)", m)
    return Judged(SELECTION, "PASS", f"{len(choices)} dual-stack names, each tried first over IPv6 ("
                  + ", ".join(f"{n} -> {c['first_syn_to']}" for n, c in list(choices.items())[:3]) + ")", m)


def _nd(audit, h) -> Judged:
    problems = []
    if h.nd_hlim.count:
        problems.append(f"ND with hop limit other than 255: {_seen(audit, h.nd_hlim)}")
    skipped = audit.dad_skipped(h)
    if skipped:
        problems.append(f"DAD skipped: {'; '.join(skipped[:4])}")
    startup = audit.startup_observed(h)
    m = {"dad_probes": len(h.dad), "startup_on_capture": startup, "nd_bad_hop_limit": h.nd_hlim.count}
    if problems:
        return Judged(ND, "FAIL", "; ".join(problems), m)
    if not h.v6_frames:
        return Judged(ND, "SKIP", "the host sent no IPv6 on the capture", m)
    dad = ("its start-up is on the capture and every address was probed first" if startup else
           f"{len(h.dad)} DAD probes seen; no address used before its probe")
    return Judged(ND, "PASS", f"every ND message with hop limit 255; {dad}", m)


def _checksums(audit, h) -> Judged:
    m = {"checksum_errors": h.checksum_bad.count}
    if h.checksum_bad.count:
        return Judged(CHECKSUMS, "FAIL", f"frames with a bad checksum: {_seen(audit, h.checksum_bad)} (a capture taken "
                                         "on the sending host shows offloaded checksums as bad)", m)
    return Judged(CHECKSUMS, "PASS", f"no checksum error in {h.frames} frames", m)


def _ra(audit, h) -> Judged:
    m = {"ra_count": h.ra.count, "rdnss": h.ra_rdnss, "pref64": h.ra_pref64, "other_config": h.ra_other_config,
         "router_lifetimes": sorted(h.ra_router_lifetimes)}
    parts = [f"{h.ra.count} RAs", f"RDNSS {', '.join(h.ra_rdnss) or 'none'}", f"PREF64 {', '.join(h.ra_pref64) or 'none'}",
             f"O flag {'set' if h.ra_other_config else 'clear'}"]
    missing = []
    if not h.ra_rdnss and not h.ra_other_config:
        missing.append("no resolver for hosts (no RDNSS and O=0)")
    if not h.ra_pref64:
        missing.append("no PREF64 (hosts must fall back to ipv4only.arpa, RFC 7050)")
    verdict = "FAIL" if not h.ra_rdnss and not h.ra_other_config else "PASS"
    return Judged(RA, verdict, "; ".join(parts) + (f" — {'; '.join(missing)}" if missing else ""), m)


def _readiness(audit, h, judged: list[Judged]) -> Judged:
    share = ipv6_share(h)
    failing = [j.finding.title for j in judged if j.verdict == "FAIL" and j.finding is not RA]
    m = {"frames": h.frames, "bytes": h.bytes, "ipv6_share_percent": share, "ipv6_frames": h.v6_frames,
         "ipv4_frames": h.v4_frames, "first_seen_s": round(h.first_time - audit.t0, 6),
         "last_seen_s": round(h.last_time - audit.t0, 6), "ipv6_addresses": list(h.ipv6_addrs)[:16],
         "ipv4_addresses": h.ipv4_addrs}
    share_text = f"IPv6 is {share}% of its {h.v6_frames + h.v4_frames} IP/ARP frames" if share is not None else \
        "no IP traffic"
    if failing:
        return Judged(READY, "FAIL", f"not ready: {'; '.join(failing)} ({share_text})", m)
    decided = [j.finding.title for j in judged if j.verdict == "PASS" and j.finding is not RA]
    return Judged(READY, "PASS", f"ready on what the capture shows ({share_text}; passed: {', '.join(decided)})", m)
