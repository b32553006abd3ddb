"""What every DHCPv6 client check shares: the bench (the tester as the
link's only router and as the DHCPv6 server), the DUT actions the checks
need (start, reboot, release), and the target's ``extensions.dhcpv6``
settings.

The tester starts the client the way a network does: a Router
Advertisement with M=1 (stateful: Solicit) or M=0, O=1 (stateless:
Information-request), RFC 4861 §4.2, resent whenever the DUT solicits a
router.  The prefix is advertised on-link (L=1) and not for SLAAC (A=0), so
the only global address the DUT gets is the one the tester's server leases.
"""

from __future__ import annotations

import ipaddress
import secrets
import time
from dataclasses import dataclass, field

from scapy.layers.inet6 import (
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6ND_RS,
    ICMPv6NDOptDstLLAddr,
    IPv6,
)
from scapy.layers.l2 import Ether

from ..core.context import CheckContext, NotApplicable
from ..core.control import NotSupported
from ..core.verdict import Deviation
from ..errors import BenchError, TargetFileError
from ..net import dhcpv6 as D
from ..net import match as M
from ..net import packets as P
from ..net.nd import prefix_option, router_advertisement

STATEFUL, STATELESS = "stateful", "stateless"
NEEDS = ["exclusive_router", "reset"]
DUT_CONFIG = "dhcp6-client"
EXTENSION_FIELDS = {"duid_types", "commands", "timing_tolerance_s", "reboot_keeps_lease"}


# -- the target's declarations -----------------------------------------------------------------------------
@dataclass
class Settings:
    """``extensions.dhcpv6`` of the target file (see example-host.yaml)."""

    duid_types: tuple[str, ...] | None = None  # None: not declared (judge what the DUT sends)
    commands: dict = field(default_factory=dict)
    timing_tolerance_s: float = 0.2
    reboot_keeps_lease: bool = True


def settings(target) -> Settings:
    """The validated settings; a bad value is a one-line error naming the field and the fix."""
    raw = (target.extensions or {}).get("dhcpv6")
    src = target.source or "target file"
    if raw is None:
        return Settings()

    def bad(fieldname, problem, fix):
        return TargetFileError(src, f"extensions.dhcpv6.{fieldname}" if fieldname else "extensions.dhcpv6",
                               problem, fix)

    if not isinstance(raw, dict):
        raise bad(None, "is not a mapping", "write duid_types: [...], commands: {release: ...}")
    unknown = set(raw) - EXTENSION_FIELDS
    if unknown:
        raise bad(sorted(unknown)[0], "unknown field", f"the fields allowed here are: {', '.join(sorted(EXTENSION_FIELDS))}")
    s = Settings()
    if "duid_types" in raw:
        types = raw["duid_types"]
        if not isinstance(types, list) or not types:
            raise bad("duid_types", f"{types!r} is not a non-empty list", "list the DUID types the DUT uses, e.g. [llt]")
        for i, ty in enumerate(types):
            if ty not in D.DUID_KEYS:
                raise bad(f"duid_types[{i}]", f"{ty!r} is not allowed", "use llt, en, ll or uuid")
        s.duid_types = tuple(types)
    if "commands" in raw:
        cmds = raw["commands"]
        if not isinstance(cmds, dict) or set(cmds) - {"release"}:
            raise bad("commands", f"{cmds!r} is not allowed", "only commands.release (a shell command) is known")
        if "release" in cmds and (not isinstance(cmds["release"], str) or not cmds["release"].strip()):
            raise bad("commands.release", "is empty", "give the command that makes the DUT release its lease")
        s.commands = dict(cmds)
    if "timing_tolerance_s" in raw:
        tol = raw["timing_tolerance_s"]
        if not isinstance(tol, int | float) or not 0 < tol <= 5:
            raise bad("timing_tolerance_s", f"{tol!r} is not a number in (0, 5]", "e.g. 0.2 (seconds)")
        s.timing_tolerance_s = float(tol)
    if "reboot_keeps_lease" in raw:
        if not isinstance(raw["reboot_keeps_lease"], bool):
            raise bad("reboot_keeps_lease", f"{raw['reboot_keeps_lease']!r} is not true or false",
                      "true if a reset keeps the DUT's DHCPv6 lease (Confirm checks need it)")
        s.reboot_keeps_lease = raw["reboot_keeps_lease"]
    return s


def require_duid_type(t: CheckContext, key: str) -> None:
    """SKIP a part for a DUID type the target does not declare."""
    declared = settings(t.target).duid_types
    if declared is not None and key not in declared:
        raise NotApplicable(f"the target declares DUID types {', '.join(declared)} (extensions.dhcpv6.duid_types), "
                            f"not {D.DUID_NAMES[D.DUID_KEYS[key]]}")


# -- the bench ---------------------------------------------------------------------------------------------
@dataclass
class Binding:
    address: str
    iaid: int
    duid: bytes
    request: D.Message
    reply_at: float


class Bench:
    """The tester as the DUT's router (RA with M/O flags) and DHCPv6 server."""

    def __init__(self, t: CheckContext, *, mode: str = STATEFUL, t1: int = 0, t2: int = 0, preferred: int = 300, valid: int = 600,
                 preference: int | None = 255, dns: bool = True, start: bool = True):
        self.t = t
        self.mode = mode
        self.s = settings(t.target)
        self.tol = self.s.timing_tolerance_s
        self.router = t.tr1
        self.prefix = t.target.link_prefix
        self.dns = t.node("DNS1") if dns else None
        self.address = P.address_in(self.prefix, P.random_iid())
        lease = D.Lease([self.address], t1=t1, t2=t2, preferred=preferred, valid=valid,
                        dns_servers=[self.dns.global_addr] if dns else [],
                        domains=[f"d{secrets.token_hex(3)}.v6gate.example"] if dns else [])
        self.server_node = t.node("DHCP6S")
        self.server = D.TesterServer(t.port, self.server_node, t.dut.mac, lease, preference=preference)
        self.defended: set[str] = set()
        self.started_at: float | None = None
        t.control.dhcpv6_check_begins()  # a simulated client (the lab's faults) starts without a lease
        self._ra_on = False
        if start:
            self.start()

    @property
    def lease(self) -> D.Lease:
        return self.server.lease

    # -- router ---------------------------------------------------------------------------
    def ra(self):
        m, o = (1, 1) if self.mode == STATEFUL else (0, 1)
        return router_advertisement(self.router, prefixes=[prefix_option(self.prefix, autonomous=0, valid=3600,
                                                                          preferred=3600)],
                                    router_lifetime=1800, managed=m, other=o)

    def _on_frame(self, port, frame) -> None:
        pkt = frame.pkt
        if frame.raw[6:12] != bytes.fromhex(self.t.dut.mac.replace(":", "")):
            return
        if self._ra_on and ICMPv6ND_RS in pkt:
            port.send(self.ra())
        elif ICMPv6ND_NS in pkt and pkt[IPv6].src == P.UNSPECIFIED and pkt[ICMPv6ND_NS].tgt in self.defended:
            # defend the address: the DUT's Duplicate Address Detection fails (RFC 4862 §5.4.3)
            tgt = pkt[ICMPv6ND_NS].tgt
            port.send(Ether(src=self.server_node.mac, dst=P.multicast_mac(P.ALL_NODES))
                      / IPv6(src=tgt, dst=P.ALL_NODES, hlim=255) / ICMPv6ND_NA(R=0, S=0, O=1, tgt=tgt)
                      / ICMPv6NDOptDstLLAddr(lladdr=self.server_node.mac))
            self.t.note(f"defended {tgt} against the DUT's DAD probe")

    def start(self) -> float:
        """Serve, advertise (M/O flags), answer Router Solicitations."""
        self.t.port.add_responder(self._on_frame)
        self.server.start()
        self.t.defer(self.stop)
        self._ra_on = True
        self.started_at = self.t.send(self.ra(), label=f"RA M={int(self.mode == STATEFUL)} O=1 from {self.router.link_local}")
        return self.started_at

    def stop(self) -> None:
        self.server.stop()
        self._ra_on = False
        self.t.port.remove_responder(self._on_frame)

    def defend(self, address: str) -> None:
        self.defended.add(address)

    # -- waiting for the client -------------------------------------------------------------------
    @property
    def first_message_within(self) -> float:
        """From the RA to the client's first message: its random start delay
        (SOL_MAX_DELAY / INF_MAX_DELAY, 1 s) plus the DUT's reaction time."""
        return 1.0 + self.t.reply_timeout + 1.0

    def wait(self, msg_type: int, within: float, since: float | None = None, count: int = 1, where=None) -> list[D.Message]:
        got = self.server.wait(msg_type, within, since or 0.0, where=where, count=count)
        for m in got[:count]:
            self.t.note(f"DUT sent {m.summary()}")
        return got

    def first(self, msg_type: int, within: float | None = None, since: float | None = None, where=None) -> D.Message | None:
        got = self.wait(msg_type, within if within is not None else self.first_message_within, since, where=where)
        return got[0] if got else None

    def reply_sent_for(self, m: D.Message, within: float) -> float | None:
        """When the server answered ``m`` (its handler ran in the port thread)."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            for ts, what in self.server.sent:
                if ts >= m.time and f"xid {m.xid:#08x}" in what:
                    return ts
            time.sleep(0.01)
        return None

    def bind(self, *, usable: bool = True) -> Binding:
        """Solicit, Advertise, Request, Reply: the client holds the lease.
        Raises NotApplicable when the DUT never asks (so the check can say
        so) and waits, with ``usable``, until the address answers."""
        req = self.first(D.REQUEST, within=self.first_message_within + 2 * D.EXCHANGES[D.SOLICIT].irt + 1)
        if req is None:
            sol = self.server.messages(D.SOLICIT)
            raise BindFailed(f"no Request {'after ' + str(len(sol)) + ' Solicit(s)' if sol else 'and no Solicit'} "
                             f"within {self.first_message_within + 3:g} s of an RA with M=1")
        at = self.reply_sent_for(req, self.t.reply_timeout) or req.time
        ia = req.ia_nas[0] if req.ia_nas else D.IA(0, 0, 0)
        b = Binding(self.address, ia.iaid, req.client_duid or b"", req, at)
        if usable and not self.wait_usable(self.address):
            raise BindFailed(f"the DUT does not answer on the leased address {self.address} after the Reply")
        return b

    # -- the DUT's use of an address --------------------------------------------------------------
    def echo(self, address: str, within: float | None = None) -> bool:
        tn = self.t.tn1
        req = self.t.to_dut(tn, address, src=tn.global_addr) / ICMPv6EchoRequest(id=0xD6, seq=secrets.randbelow(65535),
                                                                                 data=P.nonce(8))
        return self.t.expect_reply(req, M.echo_reply_to(req), within=within, what=f"Echo Reply from {address}") is not None

    def wait_usable(self, address: str, within: float | None = None) -> bool:
        """The address answers an Echo Request once its DAD is over (RFC 4862 §5.4)."""
        deadline = time.monotonic() + (within if within is not None else
                                       float(self.t.timing["ready_timeout_s"]) if not self.t.target.is_lab else 4.0)
        while True:
            if self.echo(address, within=min(0.5, self.t.reply_timeout)):
                return True
            if time.monotonic() >= deadline:
                return False

    def not_in_use(self, address: str, what: str) -> tuple[list[str], str]:
        """(problems, seen): no problem only if the address answers no Echo
        Request for the whole window (the silence window plus a DAD's worth
        of time, so that an address still being probed cannot pass for an
        unused one) and the DUT is alive afterwards."""
        t = self.t
        window = t.silence + t.retrans_timer + 1.0
        deadline = time.monotonic() + window
        while time.monotonic() < deadline:
            if self.echo(address, within=min(0.5, max(0.1, deadline - time.monotonic()))):
                seen = f"{what}: {address} answered an Echo Request"
                return [seen], seen
        if not t.alive(method="ns"):
            seen = f"no {what} within {window:g} s, but the DUT stopped answering Neighbor Solicitations"
            return [seen], seen
        return [], f"no {what} within {window:g} s, and the DUT still answered afterwards"

    # -- DUT actions ----------------------------------------------------------------------------
    def restart(self) -> float:
        """Reboot the DUT (it keeps its lease and DUID, like a device's stable storage)."""
        if not self.s.reboot_keeps_lease and self.mode == STATEFUL:
            raise NotApplicable("the target says a reset does not keep the DHCPv6 lease "
                                "(extensions.dhcpv6.reboot_keeps_lease: false)")
        since = self.t.restart_dut()
        self.t.send(self.ra(), label="RA after the restart")
        return since

    def release(self) -> float:
        """Make the DUT give its lease back (RFC 8415 §18.2.7)."""
        since = self.t.now()
        t = self.t
        try:
            t.note(t.control.release_dhcpv6_lease())
            return since
        except NotSupported:
            pass  # the target file's command, if it names one
        cmd = self.s.commands.get("release")
        if not cmd:
            raise NotApplicable("the DUT cannot be told to release its lease: set extensions.dhcpv6.commands.release "
                                "in the target file")
        t.note(f"running on the DUT: {cmd}")
        t.control.command(cmd)  # NotSupported (no adapter for commands) becomes a SKIP with its reason
        return since


class BindFailed(BenchError):
    """The DUT did not complete the exchange the check needs first."""


def bound(bench: Bench) -> Binding:
    """bind(): a client that never binds is the check's FAIL (Deviation), with what was seen."""
    try:
        return bench.bind()
    except BindFailed as exc:
        raise Deviation(f"the DUT did not obtain a lease from the tester's server: {exc}") from None


def in_prefix(address: str, prefix) -> bool:
    return ipaddress.IPv6Address(address) in ipaddress.IPv6Network(prefix)


# -- what each client message must carry (RFC 8415 §18.2.x, §21, Appendix B) ---------------------------------
MUST, MUST_NOT = "MUST", "MUST NOT"
#: option -> (requirement, clause) per message type; ORO contents are judged apart (oro_problems)
MESSAGE_RULES = {
    D.SOLICIT: {D.OPT_CLIENTID: (MUST, "§18.2.1"), D.OPT_ELAPSED_TIME: (MUST, "§18.2.1"), D.OPT_ORO: (MUST, "§18.2.1"),
                D.OPT_SERVERID: (MUST_NOT, "§18.2.1, Appendix B"), D.OPT_IA_NA: (MUST, "§18.2.1")},
    D.REQUEST: {D.OPT_CLIENTID: (MUST, "§18.2.2"), D.OPT_SERVERID: (MUST, "§18.2.2"),
                D.OPT_ELAPSED_TIME: (MUST, "§18.2.2"), D.OPT_ORO: (MUST, "§18.2.2"), D.OPT_IA_NA: (MUST, "§18.2.2")},
    D.CONFIRM: {D.OPT_CLIENTID: (MUST, "§18.2.3"), D.OPT_ELAPSED_TIME: (MUST, "§18.2.3"),
                D.OPT_SERVERID: (MUST_NOT, "§18.2.3, Appendix B"), D.OPT_IA_NA: (MUST, "§18.2.3")},
    D.RENEW: {D.OPT_CLIENTID: (MUST, "§18.2.4"), D.OPT_SERVERID: (MUST, "§18.2.4"),
              D.OPT_ELAPSED_TIME: (MUST, "§18.2.4"), D.OPT_ORO: (MUST, "§18.2.4"), D.OPT_IA_NA: (MUST, "§18.2.4")},
    D.REBIND: {D.OPT_CLIENTID: (MUST, "§18.2.5"), D.OPT_SERVERID: (MUST_NOT, "§18.2.5"),
               D.OPT_ELAPSED_TIME: (MUST, "§18.2.5"), D.OPT_ORO: (MUST, "§18.2.5"), D.OPT_IA_NA: (MUST, "§18.2.5")},
    D.RELEASE: {D.OPT_CLIENTID: (MUST, "§18.2.7"), D.OPT_SERVERID: (MUST, "§18.2.7"),
                D.OPT_ELAPSED_TIME: (MUST, "§18.2.7"), D.OPT_IA_NA: (MUST, "§18.2.7")},
    D.DECLINE: {D.OPT_CLIENTID: (MUST, "§18.2.8"), D.OPT_SERVERID: (MUST, "§18.2.8"),
                D.OPT_ELAPSED_TIME: (MUST, "§18.2.8"), D.OPT_IA_NA: (MUST, "§18.2.8")},
    D.INFORMATION_REQUEST: {D.OPT_CLIENTID: (MUST, "§18.2.6 (SHOULD; IPv6 Ready requires it)"),
                            D.OPT_ELAPSED_TIME: (MUST, "§18.2.6"), D.OPT_ORO: (MUST, "§18.2.6"),
                            D.OPT_IA_NA: (MUST_NOT, "§18.2.6, Appendix B")},
}
#: options the ORO must ask for: SOL_MAX_RT (§18.2.1, §18.2.2, §18.2.4, §18.2.5), INF_MAX_RT and the
#: Information Refresh Time (§18.2.6)
ORO_REQUIRED = {D.SOLICIT: (D.OPT_SOL_MAX_RT,), D.REQUEST: (D.OPT_SOL_MAX_RT,), D.RENEW: (D.OPT_SOL_MAX_RT,),
                D.REBIND: (D.OPT_SOL_MAX_RT,),
                D.INFORMATION_REQUEST: (D.OPT_INF_MAX_RT, D.OPT_INFORMATION_REFRESH_TIME)}
#: RFC 3646 §5: the DNS options appear only in Solicit, Advertise, Request, Renew, Rebind, Information-request, Reply
DNS_OPTION_MESSAGES = (D.SOLICIT, D.REQUEST, D.RENEW, D.REBIND, D.INFORMATION_REQUEST)


def judge_message(m: D.Message, *, mode: str = STATEFUL, server_duid: bytes | None = None,
                  client_duid: bytes | None = None, addresses: list[str] | None = None,
                  first_transmission: bool = True) -> list[str]:
    """What is wrong with client message ``m`` (empty: nothing)."""
    problems = list(m.problems)
    if m.dport != D.SERVER_PORT:
        problems.append(f"sent to UDP port {m.dport}, not {D.SERVER_PORT} (§7.2)")
    if not P.same_address(m.dst, D.ALL_DHCP_RELAY_AGENTS_AND_SERVERS) and m.type in (D.SOLICIT, D.CONFIRM, D.REBIND,
                                                                                     D.INFORMATION_REQUEST):
        problems.append(f"sent to {m.dst}, not to All_DHCP_Relay_Agents_and_Servers ff02::1:2 (§7.1, §16)")
    if not ipaddress.IPv6Address(m.src).is_link_local:
        problems.append(f"source {m.src} is not a link-local address (§13.1)")
    rules = MESSAGE_RULES.get(m.type, {})
    for code, (req, clause) in rules.items():
        if code == D.OPT_IA_NA and mode == STATELESS and m.type != D.INFORMATION_REQUEST:
            continue
        present = m.opt(code) is not None
        name = D.OPTION_NAMES[code]
        if req == MUST and not present:
            problems.append(f"no {name} option ({clause}: MUST)")
        elif req == MUST_NOT and present:
            problems.append(f"carries a {name} option ({clause}: MUST NOT)")
    for o in m.options:
        if o.code in D.SERVER_ONLY_OPTIONS:
            problems.append(f"carries a {o.name} option, which only servers send (Appendix B)")
        if o.code in (D.OPT_DNS_SERVERS, D.OPT_DOMAIN_LIST) and m.type not in DNS_OPTION_MESSAGES:
            problems.append(f"carries a {o.name} option, which RFC 3646 §5 does not allow in a {m.name}")
    if len(m.all(D.OPT_CLIENTID)) > 1 or len(m.all(D.OPT_ELAPSED_TIME)) > 1:
        problems.append("repeats the Client Identifier or Elapsed Time option")
    if m.client_duid is not None:
        duid = D.parse_duid(m.client_duid)
        problems += [f"Client Identifier: {p}" for p in duid.problems]
        if client_duid is not None and m.client_duid != client_duid:
            problems.append(f"Client Identifier {m.client_duid.hex(':')} differs from the DUID the client used "
                            f"before ({client_duid.hex(':')})")
    if server_duid is not None and m.server_duid is not None and m.server_duid != server_duid:
        problems.append(f"Server Identifier {m.server_duid.hex(':')} is not the server's DUID "
                        f"{server_duid.hex(':')} (§18.2.2: copied from the Advertise)")
    if first_transmission and m.elapsed not in (None, 0):
        problems.append(f"Elapsed Time is {m.elapsed / 100:.2f} s in the first message of the exchange, not 0 (§21.9)")
    problems += oro_problems(m)
    if addresses is not None and m.type in (D.CONFIRM, D.RENEW, D.REBIND, D.RELEASE, D.DECLINE):
        held = m.addresses()
        missing = [a for a in addresses if not any(P.same_address(a, h) for h in held)]
        if missing:
            problems.append(f"the IA_NA does not carry the address(es) {', '.join(missing)} "
                            f"(§18.2.{ {D.CONFIRM: 3, D.RENEW: 4, D.REBIND: 5, D.RELEASE: 7, D.DECLINE: 8}[m.type]})")
    for ia in m.ia_nas:
        if ia.t1 and ia.t2 and ia.t1 > ia.t2:
            problems.append(f"IA_NA {ia.iaid:#x} has T1 {ia.t1} > T2 {ia.t2} (§21.4)")
        for a in ia.addresses:
            if a.preferred > a.valid:
                problems.append(f"IA Address {a.address} has preferred lifetime {a.preferred} > valid {a.valid} (§21.6)")
    return problems


def oro_problems(m: D.Message) -> list[str]:
    oro = m.oro
    if oro is None:
        return []
    problems = []
    missing = [c for c in ORO_REQUIRED.get(m.type, ()) if c not in oro]
    if missing:
        clause = "§18.2.6" if m.type == D.INFORMATION_REQUEST else "§18.2.1-18.2.5"
        problems.append(f"the Option Request option does not ask for {', '.join(D.OPTION_NAMES[c] for c in missing)} "
                        f"({clause}: MUST)")
    for forbidden in (D.OPT_CLIENTID, D.OPT_SERVERID, D.OPT_IA_NA, D.OPT_IA_TA, D.OPT_IAADDR, D.OPT_ORO,
                      D.OPT_ELAPSED_TIME, D.OPT_RELAY_MSG, D.OPT_STATUS_CODE, D.OPT_RAPID_COMMIT):
        if forbidden in oro:
            problems.append(f"the Option Request option asks for {D.OPTION_NAMES[forbidden]}, which is not a "
                            "configuration option (§21.7)")
    if len(set(oro)) != len(oro):
        problems.append(f"the Option Request option repeats option codes ({oro})")
    return problems


def describe(m: D.Message) -> str:
    """A one-line account of a client message for the verdict."""
    parts = [m.name, f"xid {m.xid:#08x}", f"[{m.src}]:{m.sport} -> [{m.dst}]:{m.dport}"]
    if m.client_duid is not None:
        parts.append(f"client {D.parse_duid(m.client_duid).describe()}")
    if m.server_duid is not None:
        parts.append(f"server id {m.server_duid.hex(':')}")
    for ia in m.ia_nas:
        addrs = ", ".join(f"{a.address} ({a.preferred}/{a.valid} s)" for a in ia.addresses)
        parts.append(f"IA_NA {ia.iaid:#010x} T1 {ia.t1} T2 {ia.t2}" + (f" [{addrs}]" if addrs else ""))
    if m.oro is not None:
        parts.append("ORO " + ",".join(map(str, m.oro)))
    if m.elapsed is not None:
        parts.append(f"elapsed {m.elapsed / 100:.2f} s")
    return "; ".join(parts)


# -- driving the DUT to send one message type --------------------------------------------------------------
@dataclass
class Observed:
    """The first message of the kind asked for, and how the bench got there."""

    message: D.Message
    bench: Bench
    binding: Binding | None = None
    since: float = 0.0


def observe(t: CheckContext, msg_type: int, *, mode: str | None = None, bench: Bench | None = None, **bench_kw) -> Observed:
    """Drive the DUT until it sends its first ``msg_type`` and return it
    (a DUT that never sends it: Deviation, the check's FAIL).

    Solicit / Information-request: after the RA.  Request: after an
    Advertise (preference 255, no waiting).  Confirm: after a reboot of a
    bound DUT.  Renew: at T1.  Rebind: at T2 (the server ignores the
    Renews).  Release: when told to release.  Decline: the tester defends
    the leased address in DAD (RFC 8415 §18.2.8)."""
    mode = mode or (STATELESS if msg_type == D.INFORMATION_REQUEST else STATEFUL)
    kw = dict(bench_kw)
    if msg_type == D.RENEW:
        kw = {"t1": 2, "t2": 40, "preferred": 60, "valid": 80, **kw}
    elif msg_type == D.REBIND:
        kw = {"t1": 1, "t2": 3, "preferred": 60, "valid": 80, **kw}
    b = bench or Bench(t, mode=mode, **kw)
    if msg_type in (D.SOLICIT, D.INFORMATION_REQUEST):
        m = b.first(msg_type)
        if m is None:
            raise Deviation(f"no {D.name_of(msg_type)} within {b.first_message_within:g} s of an RA with "
                            f"M={int(mode == STATEFUL)} O=1 (RFC 4861 §4.2; RFC 8415 §18.2."
                            f"{'1' if msg_type == D.SOLICIT else '6'})")
        return Observed(m, b, since=b.started_at)
    if msg_type == D.DECLINE:
        b.defend(b.address)
    if msg_type == D.REBIND:
        b.server.on(D.RENEW, None)
    binding = bound(b) if msg_type not in (D.REQUEST, D.DECLINE) else None
    if msg_type == D.REQUEST:
        m = b.first(D.REQUEST, within=b.first_message_within + 2.5)
        if m is None:
            raise Deviation(f"no Request within {b.first_message_within + 2.5:g} s of the RA, after "
                            f"{len(b.server.messages(D.SOLICIT))} Solicit(s) answered with an Advertise (preference 255)")
        return Observed(m, b)
    if msg_type == D.DECLINE:
        req = b.first(D.REQUEST, within=b.first_message_within + 2.5)
        if req is None:
            raise Deviation("the DUT never requested the address it would decline")
        within = float(t.timing["ready_timeout_s"]) if not t.target.is_lab else 5.0
        m = b.first(D.DECLINE, within=within, since=req.time)
        if m is None:
            raise Deviation(f"no Decline within {within:g} s after the Reply, although the tester answered the DUT's "
                            f"Duplicate Address Detection probe for {b.address} (RFC 8415 §18.2.8)")
        return Observed(m, b)
    since = t.now()
    if msg_type == D.CONFIRM:
        since = b.restart()
        within = float(t.timing["ready_timeout_s"]) + D.EXCHANGES[D.CONFIRM].max_delay + t.reply_timeout
        what = "after a restart of the DUT while it held a lease (RFC 8415 §18.2.3)"
    elif msg_type == D.RENEW:
        since = binding.reply_at  # T1 may pass while bind() checks that the address works
        within = b.lease.t1 + 2 + t.reply_timeout
        what = f"by T1 = {b.lease.t1} s (RFC 8415 §18.2.4)"
    elif msg_type == D.REBIND:
        since = binding.reply_at
        within = b.lease.t2 + 2 + t.reply_timeout
        what = f"by T2 = {b.lease.t2} s with the Renews unanswered (RFC 8415 §18.2.5)"
    elif msg_type == D.RELEASE:
        since = b.release()
        within = 2 + t.reply_timeout
        what = "after the DUT was told to release its lease (RFC 8415 §18.2.7)"
    else:
        raise ValueError(msg_type)
    m = b.first(msg_type, within=within, since=since)
    if m is None:
        raise Deviation(f"no {D.name_of(msg_type)} within {within:g} s {what}")
    return Observed(m, b, binding, since=since)
