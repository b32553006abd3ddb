"""What each host on a capture did, and what it means for IPv6-only
readiness.  Pure logic over decoded fields (see ``tshark.FIELDS``); the
state per host is bounded (counters, the first frame of each kind, capped
address sets), so memory grows with the number of hosts, never with the
number of packets.

The rules are the active checks' (``v6gate.net.v6only``): what counts as
IPv4 a host depends on, what RFC 8925 still allows.

The C engine holds the same rules (``engine/rules.c``, a function per
method here, same bounds, same order) and is the one that runs by default:
a change here must be made there too.  ``tests/unit/test_audit_engine.py``
compares the two host by host and fails until they agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..net import v6only as V
from .tshark import F

# What a host keeps, bounded.  Written here once: the C engine is built with these values (hosts.BOUNDS
# given to the compiler as -D by core.py; engine/engine.h only checks that it got them).
MAX_ADDRESSES = 32  # per host and family: enough to describe it, bounded
MAX_RESOLVERS = 16
MAX_NAMES = 64  # names with answers remembered per host, for address selection
MAX_DAD = 4 * MAX_ADDRESSES  # addresses probed by DAD
MAX_OFFERS = 8  # DHCPv4 offers with option 108
MAX_SKIPPED = 8  # addresses used without DAD in a start-up episode
MAX_RS = 4  # Router Solicitation times
MAX_PREF64 = 8  # PREF64 prefixes of RAs
MAX_LIFETIMES = 8  # Router Lifetimes of RAs
BOUNDS = {"MAX_ADDRESSES": MAX_ADDRESSES, "MAX_RESOLVERS": MAX_RESOLVERS, "MAX_NAMES": MAX_NAMES, "MAX_DAD": MAX_DAD,
          "MAX_OFFERS": MAX_OFFERS, "MAX_SKIPPED": MAX_SKIPPED, "MAX_RS": MAX_RS, "MAX_PREF64": MAX_PREF64,
          "MAX_LIFETIMES": MAX_LIFETIMES, "MIN_V6ONLY_WAIT_S": float(V.MIN_V6ONLY_WAIT_S)}
ND_TYPES = {133: "RS", 134: "RA", 135: "NS", 136: "NA", 137: "Redirect"}
CHECKSUM_BAD = "0"  # tshark's PROTO_CHECKSUM_E_BAD
#: RFC 4861 §6.3.7, RFC 4862 §5.4, RFC 3810 §6: an interface starts with Router
#: Solicitations, DAD probes and MLD reports; its first RS follows within seconds
STARTUP_TYPES = {133, 135, 143, 131}
STARTUP_WINDOW_S = 3.0
#: the unspecified address as the fields show it (net.packets.UNSPECIFIED; not imported from there: that
#: module loads Scapy's IPv6 layers, 45 MiB of the audit's memory for one string)
UNSPECIFIED = "::"
#: RFC 7050 §3: the name a CLAT (RFC 6877) asks AAAA records of to discover its NAT64 prefix
CLAT_QUERY = "ipv4only.arpa"


def _first(value: str) -> str:
    return value.split(",", 1)[0] if value else ""


def _ints(value: str) -> list[int]:
    out = []
    for v in value.split(",") if value else ():
        try:
            out.append(int(v, 0))
        except ValueError:
            continue
    return out


def _is_group(mac: str) -> bool:
    try:
        return bool(int(mac[:2], 16) & 1)
    except ValueError:
        return True


@dataclass(slots=True)
class Seen:
    """A count and the first occurrence: when, which frame, what."""

    count: int = 0
    first_time: float | None = None
    first_frame: int | None = None
    first: str = ""

    def add(self, time: float, frame: int, what: str) -> None:
        if self.count == 0:
            self.first_time, self.first_frame, self.first = time, frame, what
        self.count += 1

    def more(self, n: int, _first_time: float, _last_time: float) -> None:
        """``n`` more, none of them the first (what the fast path counted)."""
        self.count += n

    def as_dict(self, t0: float) -> dict:
        if not self.count:
            return {"count": 0}
        return {"count": self.count, "first_seen_s": round(self.first_time - t0, 6), "first_frame": self.first_frame,
                "first": self.first}


@dataclass(slots=True)
class Host:
    mac: str
    frames: int = 0
    bytes: int = 0
    first_time: float = 0.0
    last_time: float = 0.0
    first_frame_desc: str = ""
    first_frame_startup: bool = False  # its first frame is a start-up message (RS, MLD report, from ::)
    v6_frames: int = 0
    v4_frames: int = 0  # IPv4 and ARP
    other_frames: int = 0
    v6_bytes: int = 0
    kinds: dict = field(default_factory=dict)  # classify_ipv4 kind -> Seen
    ipv4_addrs: list = field(default_factory=list)
    ipv6_addrs: dict = field(default_factory=dict)  # address -> (first use time, frame, probed before?)
    dad: dict = field(default_factory=dict)  # address -> time of its first DAD NS
    episode: float | None = None  # the last interface (re)start: a DAD probe of a link-local address
    episode_probed: set = field(default_factory=set)
    episode_used: set = field(default_factory=set)
    dad_skipped: list = field(default_factory=list)  # (address, time, frame) used before its probe in an episode
    rs_times: list = field(default_factory=list)  # the first few RS
    dhcp_client: dict = field(default_factory=dict)  # message -> Seen (with / without 108)
    offers_108: list = field(default_factory=list)  # (time, frame, yiaddr, server, V6ONLY_WAIT)
    quiet_until: float = 0.0  # the end of V6ONLY_WAIT after the last OFFER with option 108
    quiet_ended_by_restart: bool = False  # ...or the interface restart (network attachment) that ended it
    after_offer_108: Seen = field(default_factory=Seen)  # DHCPv4, ARP or IPv4 within V6ONLY_WAIT of that OFFER
    dns: dict = field(default_factory=dict)  # (family, resolver) -> count
    dns_qtypes: dict = field(default_factory=dict)
    dns_v4: Seen = field(default_factory=Seen)
    nd_hlim: Seen = field(default_factory=Seen)
    checksum_bad: Seen = field(default_factory=Seen)
    ra: Seen = field(default_factory=Seen)
    ra_rdnss: list = field(default_factory=list)
    ra_pref64: list = field(default_factory=list)
    ra_other_config: bool = False
    ra_router_lifetimes: set = field(default_factory=set)
    answers: dict = field(default_factory=dict)  # name -> {"A": set, "AAAA": set} answered to the host
    first_choice: dict = field(default_factory=dict)  # dual-stack name -> (family of the first SYN, time, frame, dst)
    ipv6: Seen = field(default_factory=Seen)  # every IPv6 frame: the asset class's evidence (assets.py)
    clat: Seen = field(default_factory=Seen)  # DNS queries for ipv4only.arpa: a CLAT's prefix discovery (RFC 7050 §3)


class Audit:
    """Feed every frame with ``add``; read ``hosts`` (by MAC).

    ``option_108(offset)`` returns the value of the IPv6-Only Preferred
    option of the DHCPOFFER recorded at that file offset (tshark 4.0 shows
    it only as bytes; the audit decodes those few frames with Scapy)."""

    def __init__(self, option_108=None):
        self.option_108 = option_108 or (lambda offset: None)
        self.hosts: dict[str, Host] = {}
        self.t0: float | None = None
        self.t_last: float = 0.0
        self.frames = 0
        self.rdnss_seen: set = set()
        self.pref64_seen: set = set()

    def _host(self, mac: str, time: float, frame: int, desc: str) -> Host:
        h = self.hosts.get(mac)
        if h is None:
            h = self.hosts[mac] = Host(mac, first_time=time, last_time=time, first_frame_desc=desc)
        return h

    def add(self, frame: int, offset: int, f: list[str]) -> None:
        try:
            time = float(f[F["time"]])
        except ValueError:
            return
        self.frames += 1
        if self.t0 is None:
            self.t0 = time
        self.t_last = time
        src = f[F["esrc"]]
        etypes = _ints(f[F["etype"]])
        etype = etypes[0] if etypes else None
        if etype == 0x8100:
            inner = _ints(f[F["vlan_etype"]])
            etype = inner[0] if inner else None
        icmp6 = _ints(f[F["icmp6_type"]])
        icmp6_type = icmp6[0] if icmp6 else None
        v6_src = _first(f[F["v6_src"]])
        # a DHCPOFFER is about its client, a DNS answer about its asker, wherever they are sent from
        if f[F["dhcp_type"]] and _first(f[F["dport"]]) == str(V.DHCP_CLIENT_PORT):
            self._server_message(frame, offset, time, f)
        if (f[F["dns_a"]] or f[F["dns_aaaa"]]) and f[F["dns_resp"]] in ("1", "True", "true"):
            self._answer(time, frame, f)
        if not src or _is_group(src):
            return
        desc = self._describe(f, etype, icmp6_type)
        h = self._host(src, time, frame, desc)
        if not h.frames:
            h.first_frame_startup = icmp6_type in STARTUP_TYPES or v6_src == UNSPECIFIED
        h.frames += 1
        try:
            size = int(f[F["len"]])
        except ValueError:
            size = 0
        h.bytes += size
        h.last_time = time
        if etype == V.ETH_P_IPV6:
            h.v6_frames += 1
            h.v6_bytes += size
            h.ipv6.add(time, frame, desc)
        elif etype in (V.ETH_P_IPV4, V.ETH_P_ARP):
            h.v4_frames += 1
        else:
            h.other_frames += 1
        self._ipv4(h, frame, time, f, etype, desc)
        if etype == V.ETH_P_IPV6:
            self._ipv6(h, frame, time, f, icmp6_type, v6_src, desc)
        if f[F["tcp_syn"]] in ("1", "True", "true") and f[F["tcp_ack"]] in ("0", "False", "false") and h.answers:
            self._first_choice(h, time, frame, etype, _first(f[F["ip_dst"]]) if etype == V.ETH_P_IPV4
                               else _first(f[F["v6_dst"]]))
        if CHECKSUM_BAD in (_first(f[F["ip_ck"]]), _first(f[F["udp_ck"]]), _first(f[F["tcp_ck"]]),
                            _first(f[F["icmp6_ck"]])):
            h.checksum_bad.add(time, frame, desc)

    # -- IPv4 the host depends on, DHCPv4 and RFC 8925 --------------------------------------------------
    def _ipv4(self, h: Host, frame: int, time: float, f: list[str], etype, desc: str) -> None:
        icmp_error = bool(f[F["icmp_type"]])
        sport = _first(f[F["sport"]]) if not icmp_error else ""
        dport = _first(f[F["dport"]]) if not icmp_error else ""
        prl = _ints(f[F["dhcp_prl"]])
        kind = V.classify_ipv4(etype, udp_sport=int(sport) if sport else None, udp_dport=int(dport) if dport else None,
                               dhcp_prl=prl)
        if kind is None:
            return
        h.kinds.setdefault(kind, Seen()).add(time, frame, desc)
        addr = _first(f[F["ip_src"]]) or _first(f[F["arp_spa"]])
        if addr and addr != "0.0.0.0" and addr not in h.ipv4_addrs and len(h.ipv4_addrs) < MAX_ADDRESSES:
            h.ipv4_addrs.append(addr)
        msg = _ints(f[F["dhcp_type"]])
        if kind in (V.DHCPV4, V.DHCPV4_RFC8925) and msg:
            name = V.DHCP_MESSAGE.get(msg[0], f"DHCP message {msg[0]}")
            with108 = V.OPTION_V6ONLY_PREFERRED in prl
            h.dhcp_client.setdefault((name, with108), Seen()).add(time, frame, desc)
        if h.offers_108 and h.offers_108[0][0] < time <= h.quiet_until:
            h.after_offer_108.add(time, frame, desc)
        if kind != V.ARP and not icmp_error and f[F["dns_qname"]] and f[F["dns_resp"]] in ("0", "False", "false"):
            h.dns_v4.add(time, frame, desc)
            self._dns(h, 4, _first(f[F["ip_dst"]]), f, time, frame, desc)

    def _server_message(self, frame: int, offset: int, time: float, f: list[str]) -> None:
        msg = _ints(f[F["dhcp_type"]])
        client = _first(f[F["dhcp_chaddr"]])
        if not msg or msg[0] != 2 or not client or V.OPTION_V6ONLY_PREFERRED not in _ints(f[F["dhcp_opts"]]):
            return
        h = self._host(client, time, frame, "(seen first as a DHCP client)")
        # RFC 8925 §3.2: V6ONLY_WAIT is the option's value or MIN_V6ONLY_WAIT, whichever is greater
        value = self.option_108(offset)
        wait = max(float(value or 0), float(V.MIN_V6ONLY_WAIT_S))
        h.quiet_until, h.quiet_ended_by_restart = max(h.quiet_until, time + wait), False
        if len(h.offers_108) < MAX_OFFERS:
            h.offers_108.append((time, frame, _first(f[F["dhcp_yiaddr"]]), _first(f[F["ip_src"]]), value))

    # -- destination address selection (RFC 6724) -------------------------------------------------------
    def _answer(self, time: float, frame: int, f: list[str]) -> None:
        asker = f[F["edst"]]
        if not asker or _is_group(asker):
            return
        h = self._host(asker, time, frame, "(seen first as the receiver of a DNS answer)")
        name = _first(f[F["dns_qname"]]).lower()
        if name not in h.answers:
            if len(h.answers) >= MAX_NAMES:
                h.answers.pop(next(iter(h.answers)))
            h.answers[name] = {"A": set(), "AAAA": set()}
        h.answers[name]["A"].update(a for a in f[F["dns_a"]].split(",") if a)
        h.answers[name]["AAAA"].update(a for a in f[F["dns_aaaa"]].split(",") if a)

    def _first_choice(self, h: Host, time: float, frame: int, etype, dst: str) -> None:
        """The first connection (SYN) of the host to a name that had both
        AAAA and A answers: which family did it try first?"""
        for name, ans in h.answers.items():
            if name in h.first_choice or not (ans["A"] and ans["AAAA"]):
                continue
            if dst in ans["A"] or dst in ans["AAAA"]:
                family = 6 if etype == V.ETH_P_IPV6 else 4
                if len(h.first_choice) < MAX_NAMES:
                    h.first_choice[name] = (family, time, frame, dst)
                return

    # -- IPv6: DNS, ND, RAs -----------------------------------------------------------------------------
    def _ipv6(self, h: Host, frame: int, time: float, f: list[str], icmp6_type, v6_src: str, desc: str) -> None:
        is_error = icmp6_type is not None and icmp6_type < 128
        if not is_error and f[F["dns_qname"]] and f[F["dns_resp"]] in ("0", "False", "false"):
            self._dns(h, 6, _first(f[F["v6_dst"]]), f, time, frame, desc)
        if icmp6_type in ND_TYPES:
            hlim = _first(f[F["hlim"]])
            if hlim and hlim != "255":
                h.nd_hlim.add(time, frame, f"{ND_TYPES[icmp6_type]} with hop limit {hlim}")
            if icmp6_type == 135 and v6_src == UNSPECIFIED:
                self._dad_probe(h, time, _first(f[F["ns_target"]]))
            if icmp6_type == 133 and len(h.rs_times) < MAX_RS:
                h.rs_times.append(time)
            if icmp6_type == 134:
                self._ra(h, frame, time, f)
        if not v6_src or v6_src == UNSPECIFIED:
            return
        if v6_src not in h.ipv6_addrs and len(h.ipv6_addrs) < MAX_ADDRESSES:
            h.ipv6_addrs[v6_src] = (time, frame, v6_src in h.dad)
        self.episode_use(h, v6_src, time, frame)

    @staticmethod
    def episode_use(h: Host, v6_src: str, time: float, frame: int) -> None:
        """The host sends from ``v6_src``: used in its interface's episode
        (and used without a DAD probe if it was not probed in it)."""
        if h.episode is not None and v6_src not in h.episode_used and len(h.episode_used) < MAX_ADDRESSES:
            h.episode_used.add(v6_src)
            if v6_src not in h.episode_probed and len(h.dad_skipped) < MAX_SKIPPED:
                h.dad_skipped.append((v6_src, time, frame))

    def _dad_probe(self, h: Host, time: float, target: str) -> None:
        """A DAD probe (RFC 4862 §5.4.2); one for a link-local address marks
        an interface (re)start: a network attachment event (RFC 8925 §3.2 ends
        V6ONLY_WAIT there) and the start of an episode in which every address
        must be probed before use."""
        if not target:
            return
        if target not in h.dad and len(h.dad) < MAX_DAD:
            h.dad[target] = time
        if target.lower().startswith("fe80:"):
            h.episode, h.episode_probed, h.episode_used = time, {target}, set()
            if h.quiet_until > time:
                h.quiet_until, h.quiet_ended_by_restart = time, True
        elif h.episode is not None:
            h.episode_probed.add(target)

    def _dns(self, h: Host, family: int, resolver: str, f: list[str], time: float, frame: int, desc: str) -> None:
        key = (family, resolver)
        if key in h.dns or len(h.dns) < MAX_RESOLVERS:
            h.dns[key] = h.dns.get(key, 0) + 1
        for qt in _ints(f[F["dns_qtype"]])[:1]:
            name = V.DNS_QTYPE.get(qt, str(qt))
            h.dns_qtypes[name] = h.dns_qtypes.get(name, 0) + 1
        if _first(f[F["dns_qname"]]).lower() == CLAT_QUERY:  # RFC 7050 §3: a CLAT discovers its NAT64 prefix
            h.clat.add(time, frame, desc)

    def _ra(self, h: Host, frame: int, time: float, f: list[str]) -> None:
        h.ra.add(time, frame, "Router Advertisement")
        for s in f[F["rdnss"]].split(",") if f[F["rdnss"]] else ():
            if s not in h.ra_rdnss and len(h.ra_rdnss) < MAX_RESOLVERS:
                h.ra_rdnss.append(s)
            self.rdnss_seen.add(s)
        plcs = _ints(f[F["pref64_plc"]])
        for i, p in enumerate(f[F["pref64"]].split(",") if f[F["pref64"]] else ()):
            plen = V.PREF64_PLC.get(plcs[i] if i < len(plcs) else 0, 96)
            pfx = f"{p}/{plen}"
            if pfx not in h.ra_pref64 and len(h.ra_pref64) < MAX_PREF64:
                h.ra_pref64.append(pfx)
            self.pref64_seen.add(pfx)
        if f[F["ra_flag_o"]] in ("1", "True", "true"):
            h.ra_other_config = True
        for lt in _ints(f[F["ra_lifetime"]])[:1]:
            if len(h.ra_router_lifetimes) < MAX_LIFETIMES:
                h.ra_router_lifetimes.add(lt)

    @staticmethod
    def _describe(f: list[str], etype, icmp6_type) -> str:
        if etype == V.ETH_P_ARP:
            op = {"1": "who-has", "2": "is-at"}.get(f[F["arp_op"]], f"op {f[F['arp_op']]}")
            return f"ARP {op} {f[F['arp_tpa']]} from {f[F['arp_spa']]}"
        if f[F["dhcp_type"]]:
            msg = V.DHCP_MESSAGE.get(_ints(f[F["dhcp_type"]])[0], "DHCP")
            if _first(f[F["sport"]]) == str(V.DHCP_SERVER_PORT):
                return f"{msg} of {f[F['dhcp_yiaddr']]} to {f[F['dhcp_chaddr']]} from {_first(f[F['ip_src']])}"
            return f"{msg} parameter request list [{f[F['dhcp_prl']]}]"
        if etype == V.ETH_P_IPV4:
            return f"IPv4 {_first(f[F['ip_src']])} -> {_first(f[F['ip_dst']])}"
        if etype == V.ETH_P_IPV6:
            what = ND_TYPES.get(icmp6_type, f"ICMPv6 type {icmp6_type}" if icmp6_type is not None else "IPv6")
            if f[F["dns_qname"]]:
                what = f"DNS {'response' if f[F['dns_resp']] in ('1', 'True', 'true') else 'query'} "\
                       f"{_first(f[F['dns_qname']])}"
            return f"{what} {_first(f[F['v6_src']])} -> {_first(f[F['v6_dst']])}"
        return f"ethertype {hex(etype) if etype is not None else '?'}"

    # -- judgements ---------------------------------------------------------------------------------------
    def startup_observed(self, h: Host) -> bool:
        """The capture holds the host's start-up: its first frame is a
        start-up message (an RS, a DAD probe, an MLD report or anything from
        ::) and a Router Solicitation follows within seconds (RFC 4861
        §6.3.7: hosts solicit when an interface becomes enabled; a running
        host does not)."""
        return h.first_frame_startup and any(t - h.first_time <= STARTUP_WINDOW_S for t in h.rs_times)

    def dad_skipped(self, h: Host) -> list[str]:
        """Addresses used as a source without Duplicate Address Detection:
        after an interface (re)start of the host (a DAD probe of its
        link-local address), every address it uses must have been probed
        first; a host that never probes is judged only when its start-up is
        on the capture."""
        out = [f"{a} used at frame {frame} (+{t - self.t0:.3f} s) without a DAD probe since the interface "
               "started" for a, t, frame in h.dad_skipped]
        if not h.dad and self.startup_observed(h):
            out += [f"{a} used from frame {frame} and never probed (the host's start-up is on the capture)"
                    for a, (t, frame, _) in h.ipv6_addrs.items()]
        return out
