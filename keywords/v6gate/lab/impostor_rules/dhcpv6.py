"""Impostor rules for DHCPv6: a simulated DHCPv6 client that plays the lab
DUT's client, conforming to RFC 8415 except for the one misbehaviour a
fault asks for.

The DHCPv6 faults silence the DUT's real client (an nft rule dropping its
DHCPv6 output; the impostor's packet socket is not subject to it) and let
this client speak for the DUT instead: same MAC, same link-local address.
It starts as a host does, on a Router Advertisement's M flag (Solicit) or O
flag alone (Information-request), retransmits on RFC 8415 §15 timers,
validates what servers send (§16), handles status codes (§18.2.10), keeps
the lease's T1/T2 and lifetimes, declines an address its DAD probe finds in
use, confirms a remembered lease after a restart, and simulates using its
addresses (answers Neighbor Solicitations and Echo Requests for them).

Knobs (fault ``params``), each a deviation from RFC 8415 — see
``fixtures/faults/dhcpv6.yaml`` for the faults that use them:

======================  ==============================================================
wrong_group             sends to ff05::1:3 instead of ff02::1:2 (§7.1)
wrong_ports             sends from port 5460 to port 548 (§7.2)
any_port                accepts answers sent to any UDP port (§7.2)
malformed               omits Client Identifier and Elapsed Time, adds a Preference option
malformed_duid          a DUID-LLT with a 4-octet Ethernet address (§11.2)
new_duid                a new random DUID at every start (§11); value: llt | en | ll
new_iaid                a new IAID at every start (§12.1)
mangle_server_id        a Server Identifier that is not the server's DUID (§18.2.2)
malformed_ia_na         IA_NA of 8 octets in Solicit, no IA Address in Renew (§21.4, §18.2.4)
confirm_without_addresses  the Confirm's IA_NA carries no address (§18.2.3)
omit_elapsed            no Elapsed Time option (§21.9)
freeze_elapsed          Elapsed Time stays 0 in retransmissions (§21.9)
omit_dns_oro            ORO without options 23 and 24 (RFC 3646)
dns_everywhere          carries DNS options 23/24 in every message (RFC 3646 §5)
new_xid                 a new transaction ID for each retransmission (§15)
no_backoff              retransmits every IRT, without doubling or randomization (§15)
ignore_limits           no MRT cap, no MRC, no MRD (renews past T2, rebinds past the valid lifetime)
ignore_mrd              keeps MRT but no MRC or MRD: renews past T2, rebinds past the valid lifetime
rfc3315_max_rt          SOL_MAX_RT and INF_MAX_RT of 120 s (RFC 3315) instead of 3600 s (§7.6)
request_at_once         requests on the first Advertise without collecting for the first RT (§18.2.9)
wait_after_rt           after the first RT, waits for the next retransmission before requesting (§18.2.9)
ignore_preference       requests from the first Advertise, not the most preferred (§18.2.9)
ignore_t1               renews 3 s after T1 (§18.2.4)
ignore_new_addresses    does not add addresses a Reply adds to the IA (§18.2.10.1)
ignore_lifetime_updates keeps the first lifetimes (§18.2.10.1)
keep_zero_lifetime      keeps addresses a Reply gives a valid lifetime of 0 (§18.2.10.1)
drop_unlisted           drops addresses a Reply does not list (§18.2.10.1)
retry_at_once           resends at once after UnspecFail or a missing IA (§18.2.10, §14.1)
ignore_use_multicast    does not resend after UseMulticast (§18.2.10)
ignore_status           treats every Reply as Success (§18.2.10, §18.2.10.1)
solicit_after_confirm   drops the lease after a successful Confirm (§18.2.10.1)
accept_invalid          skips the validation of Advertise and Reply (§16.3, §16.10, §21.4, §21.6)
answers_client_messages answers client messages sent to it (§16)
keep_released           keeps using a released address (§18.2.7)
keep_declined           keeps using a declined address (§18.2.8)
retransmit_after_reply  goes on retransmitting Release/Decline after the Reply (§18.2.10.2)
swap_ra_flags           M=1 starts an Information-request, O alone a Solicit (RFC 4861 §4.2)
rapid_commit            offers Rapid Commit (§21.14)
accept_rapid_reply      accepts a Reply to a Solicit without Rapid Commit (§18.2.10)
accept_reconfigure      renews on a Reconfigure without authentication (§16.11)
ignore_rapid_reply      offers Rapid Commit but ignores the Reply to its Solicit (§18.2.1)
collect_despite_255     waits out the first RT even after an Advertise with preference 255 (§18.2.9)
ignores_leases          never uses the addresses it leases (§18.2.10.1)
======================  ==============================================================
"""

from __future__ import annotations

import hashlib
import random
import secrets
import struct
import threading
import time

from scapy.layers.inet import UDP
from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6ND_RA,
    ICMPv6NDOptDstLLAddr,
    IPv6,
)
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ...net import dhcpv6 as D
from ...net import packets as P
from ..impostor import rule

#: what a simulated client remembers across a restart of the lab DUT (its stable storage), per DUT MAC
MEMORY: dict[str, dict] = {}
_LISTENERS: dict[str, list] = {}


def notify(mac: str, event: str) -> None:
    """Tell the simulated client of the DUT ``mac`` about a DUT action: "release"
    (give the lease back), "fresh" (a new check: the DUT starts without a lease)."""
    mac = mac.lower()
    if event == "fresh":
        MEMORY.get(mac, {}).pop("lease", None)
    live = [c for c in _LISTENERS.get(mac, []) if c.imp.port.sock is not None]
    _LISTENERS[mac] = live
    for client in live:
        client.event(event)


class SimulatedClient:
    def __init__(self, imp, dut: dict, knobs: dict):
        self.imp = imp
        self.mac = dut["mac"].lower()
        self.ll = dut["link_local"]
        self.k = knobs
        self.lock = threading.RLock()
        mem = MEMORY.setdefault(self.mac, {})
        seed = int.from_bytes(hashlib.sha256(self.mac.encode()).digest()[:4], "big")
        self.duid = self._duid(mem, seed)
        self.iaid = secrets.randbits(32) if knobs.get("new_iaid") else (seed & 0xFFFFFFFF) or 1
        self.mem = mem
        self.state = "idle"
        self.ex = None  # the running exchange
        self.addresses: dict[str, dict] = {}  # address -> {preferred, valid, until, server}
        self.server_duid: bytes | None = None
        self.server_addr: str | None = None
        self.lease_timers: list = []
        self.declined: set[str] = set()
        self.released: set[str] = set()
        self.sol_max_rt = D.RFC3315_MAX_RT if knobs.get("rfc3315_max_rt") else D.EXCHANGES[D.SOLICIT].mrt
        self.inf_max_rt = D.RFC3315_MAX_RT if knobs.get("rfc3315_max_rt") else D.EXCHANGES[D.INFORMATION_REQUEST].mrt
        self.advertises: list[tuple[int, D.Message]] = []
        self.started = False
        self.server_mac: str | None = None
        self.chosen: D.Message | None = None  # the Advertise the client requested from
        _LISTENERS.setdefault(self.mac, []).append(self)

    # -- identity ---------------------------------------------------------------------------
    def _duid(self, mem: dict, seed: int) -> bytes:
        mac = bytes(int(x, 16) for x in self.mac.split(":"))
        if self.k.get("malformed_duid"):
            return struct.pack("!HHI", D.DUID_LLT, 1, seed) + mac[:4]
        kind = self.k.get("new_duid")
        if kind:
            rnd = secrets.token_bytes(6)
            return {"llt": struct.pack("!HHI", D.DUID_LLT, 1, secrets.randbits(32)) + rnd,
                    "en": struct.pack("!HI", D.DUID_EN, 32473) + secrets.token_bytes(8),
                    "ll": struct.pack("!HH", D.DUID_LL, 1) + rnd}[kind]
        return mem.setdefault("duid", struct.pack("!HHI", D.DUID_LLT, 1, seed >> 4) + mac)

    # -- events -----------------------------------------------------------------------------
    def event(self, name: str) -> None:
        if name == "release":
            with self.lock:
                self.release()

    def on_frame(self, pkt) -> list:
        with self.lock:
            if IPv6 not in pkt:
                return []
            if ICMPv6ND_RA in pkt:
                return self._on_ra(pkt[ICMPv6ND_RA])
            if ICMPv6ND_NS in pkt:
                return self._on_ns(pkt)
            if ICMPv6ND_NA in pkt:
                return self._on_na(pkt)
            if ICMPv6EchoRequest in pkt:
                return self._on_echo(pkt)
            if UDP in pkt:
                return self._on_udp(pkt)
        return []

    def _on_ra(self, ra) -> list:
        if self.started:
            return []
        managed, other = int(ra.M), int(ra.O)
        if self.k.get("swap_ra_flags"):
            managed, other = (0, 1) if managed else (1 if other else 0, 0)
        if managed:
            self.started = True
            if self.mem.get("lease") and not self.k.get("new_duid"):
                self._start_confirm()
            else:
                self._start(D.SOLICIT)
        elif other:
            self.started = True
            self._start(D.INFORMATION_REQUEST)
        return []

    # -- addresses in use ----------------------------------------------------------------------
    def _uses(self, addr: str) -> bool:
        if self.k.get("ignores_leases"):
            return False
        a = self.addresses.get(_norm(addr))
        if a and a.get("state") == "assigned":
            return True
        if _norm(addr) in self.declined and self.k.get("keep_declined"):
            return True
        return _norm(addr) in self.released and self.k.get("keep_released")

    def _on_ns(self, pkt) -> list:
        tgt = pkt[ICMPv6ND_NS].tgt
        if not self._uses(tgt) or pkt[IPv6].src == P.UNSPECIFIED:
            return []
        return [Ether(src=self.mac, dst=pkt[Ether].src) / IPv6(src=tgt, dst=pkt[IPv6].src, hlim=255)
                / ICMPv6ND_NA(R=0, S=1, O=1, tgt=tgt) / ICMPv6NDOptDstLLAddr(lladdr=self.mac)]

    def _on_na(self, pkt) -> list:
        tgt = _norm(pkt[ICMPv6ND_NA].tgt)
        a = self.addresses.get(tgt)
        if a and a.get("state") == "tentative" and pkt[Ether].src.lower() != self.mac:
            a["state"] = "duplicate"
            self.declined.add(tgt)
            self.addresses.pop(tgt, None)
            self._start(D.DECLINE, addresses=[tgt])
        return []

    def _on_echo(self, pkt) -> list:
        dst = pkt[IPv6].dst
        if not self._uses(dst):
            return []
        req = pkt[ICMPv6EchoRequest]
        return [Ether(src=self.mac, dst=pkt[Ether].src) / IPv6(src=dst, dst=pkt[IPv6].src)
                / ICMPv6EchoReply(id=req.id, seq=req.seq, data=req.data)]

    def _assign(self, addr: str, preferred: int, valid: int) -> None:
        addr = _norm(addr)
        known = self.addresses.get(addr)
        if known and known.get("state") == "assigned":
            if not self.k.get("ignore_lifetime_updates"):
                known.update(preferred=preferred, valid=valid, until=time.monotonic() + valid)
            return
        self.addresses[addr] = {"state": "tentative", "preferred": preferred, "valid": valid,
                                "until": time.monotonic() + valid}
        self.imp.send([Ether(src=self.mac, dst=P.multicast_mac(P.solicited_node(addr)))
                       / IPv6(src=P.UNSPECIFIED, dst=P.solicited_node(addr), hlim=255) / ICMPv6ND_NS(tgt=addr)])

        def done():
            with self.lock:
                a = self.addresses.get(addr)
                if a and a["state"] == "tentative":
                    a["state"] = "assigned"
            return []

        self.imp.later(0.3, done)

    def _expire_check(self) -> list:
        with self.lock:
            now = time.monotonic()
            for addr, a in list(self.addresses.items()):
                if a["until"] <= now and not (self.k.get("ignore_limits") or self.k.get("ignore_mrd")):
                    self.addresses.pop(addr)
            if not self.addresses and self.state in ("bound", "renewing", "rebinding"):
                self.mem.pop("lease", None)
                self._start(D.SOLICIT)
        return []

    # -- messages out ----------------------------------------------------------------------------
    def _oro(self, msg_type: int) -> bytes:
        codes = [] if self.k.get("omit_dns_oro") else [D.OPT_DNS_SERVERS, D.OPT_DOMAIN_LIST]
        codes += [D.OPT_SOL_MAX_RT] if msg_type != D.INFORMATION_REQUEST else [D.OPT_INF_MAX_RT,
                                                                              D.OPT_INFORMATION_REFRESH_TIME]
        return D.opt(D.OPT_ORO, b"".join(struct.pack("!H", c) for c in codes))

    def _ia(self, msg_type: int, addresses: list[str] | None) -> bytes:
        if self.k.get("malformed_ia_na") and msg_type == D.SOLICIT:
            return D.opt(D.OPT_IA_NA, struct.pack("!II", self.iaid, 0))
        if self.k.get("malformed_ia_na") and msg_type == D.RENEW:
            addresses = []
        if self.k.get("confirm_without_addresses") and msg_type == D.CONFIRM:
            addresses = []
        return D.ia_na_option(self.iaid, 0, 0, [(a, 0, 0) for a in (addresses or [])])

    def build(self, msg_type: int, xid: int, elapsed_cs: int, addresses: list[str] | None = None) -> bytes:
        opts = []
        if not self.k.get("malformed"):
            opts.append(D.opt(D.OPT_CLIENTID, self.duid))
        if msg_type in (D.REQUEST, D.RENEW, D.RELEASE, D.DECLINE) and self.server_duid:
            sid = self.server_duid
            if self.k.get("mangle_server_id"):
                sid = sid[:-1] + bytes([sid[-1] ^ 0xFF])
            opts.append(D.opt(D.OPT_SERVERID, sid))
        if msg_type != D.INFORMATION_REQUEST:
            opts.append(self._ia(msg_type, addresses))
        if msg_type in (D.SOLICIT, D.REQUEST, D.RENEW, D.REBIND, D.INFORMATION_REQUEST, D.CONFIRM) or \
                self.k.get("dns_everywhere"):
            opts.append(self._oro(msg_type))
        if not (self.k.get("malformed") or self.k.get("omit_elapsed")):
            value = 0 if self.k.get("freeze_elapsed") else min(elapsed_cs, 0xFFFF)
            opts.append(D.opt(D.OPT_ELAPSED_TIME, struct.pack("!H", value)))
        if self.k.get("malformed"):
            opts.append(D.opt(D.OPT_PREFERENCE, b"\x00"))
        if self.k.get("dns_everywhere"):
            opts += [D.dns_servers_option(["2001:db8::53"]), D.domain_list_option(["v6gate.example"])]
        if msg_type == D.SOLICIT and self.k.get("rapid_commit"):
            opts.append(D.opt(D.OPT_RAPID_COMMIT))
        return D.message(msg_type, xid, opts)

    def frame(self, payload: bytes, unicast: str | None = None):
        dst = unicast or ("ff05::1:3" if self.k.get("wrong_group") else D.ALL_DHCP_RELAY_AGENTS_AND_SERVERS)
        sport, dport = (5460, 548) if self.k.get("wrong_ports") else (D.CLIENT_PORT, D.SERVER_PORT)
        dst_mac = P.multicast_mac(dst) if P.is_multicast(dst) else self.server_mac
        return (Ether(src=self.mac, dst=dst_mac) / IPv6(src=self.ll, dst=dst) / UDP(sport=sport, dport=dport)
                / Raw(payload))

    # -- exchanges (RFC 8415 §15) ------------------------------------------------------------------
    def _start(self, msg_type: int, addresses: list[str] | None = None, delay: float | None = None) -> None:
        ex = D.EXCHANGES[msg_type]
        if self.ex:
            self.ex["cancelled"] = True
        mrt = {D.SOLICIT: self.sol_max_rt, D.INFORMATION_REQUEST: self.inf_max_rt}.get(msg_type, ex.mrt)
        self.state = {D.SOLICIT: "soliciting", D.REQUEST: "requesting", D.CONFIRM: "confirming",
                      D.RENEW: "renewing", D.REBIND: "rebinding", D.RELEASE: "releasing", D.DECLINE: "declining",
                      D.INFORMATION_REQUEST: "informing"}[msg_type]
        self.advertises = []
        e = {"type": msg_type, "xid": D.fresh_xid(), "first": None, "rt": 0.0, "count": 0, "mrt": mrt,
             "mrc": ex.mrc, "mrd": ex.mrd, "irt": ex.irt, "addresses": addresses, "cancelled": False,
             "unicast": None}
        if msg_type == D.RENEW:
            e["mrd"] = max(0.1, self.mem.get("t2_at", time.monotonic()) - time.monotonic())
        if msg_type == D.REBIND:
            e["mrd"] = max(0.1, max((a["until"] for a in self.addresses.values()), default=time.monotonic())
                           - time.monotonic())
        if self.k.get("ignore_limits"):
            e["mrt"], e["mrc"], e["mrd"] = 0, 0, 0
        if self.k.get("ignore_mrd"):
            e["mrc"], e["mrd"] = 0, 0
        self.ex = e
        if delay is None:
            delay = random.uniform(0, ex.max_delay) if ex.max_delay else 0.0
        self.imp.later(delay, lambda: self._transmit(e))

    def _next_rt(self, e) -> float:
        if self.k.get("no_backoff"):
            return e["irt"]
        rand = random.uniform(-D.RAND, D.RAND)
        if e["rt"] == 0:
            if e["type"] == D.SOLICIT:
                rand = random.uniform(0.01, D.RAND)
            rt = e["irt"] + rand * e["irt"]
        else:
            rt = 2 * e["rt"] + rand * e["rt"]
        if e["mrt"] and rt > e["mrt"]:
            rt = e["mrt"] + rand * e["mrt"]
        return rt

    def _transmit(self, e) -> list:
        with self.lock:
            if e["cancelled"] or self.ex is not e:
                return []
            now = time.monotonic()
            if e["first"] is None:
                e["first"] = now
            elif e["mrd"] and now - e["first"] >= e["mrd"] - 0.01:
                return self._exchange_failed(e)
            if e["mrc"] and e["count"] >= e["mrc"]:
                return self._exchange_failed(e)
            if self.k.get("new_xid") and e["count"]:
                e["xid"] = D.fresh_xid()
            payload = self.build(e["type"], e["xid"], int((now - e["first"]) * 100), e["addresses"])
            e["count"] += 1
            if e["type"] == D.SOLICIT and e["count"] >= 2 and self.advertises:
                return self._choose_advertise()  # the RT is over: request from the best collected
            e["rt"] = self._next_rt(e)
            delay = e["rt"]
            if e["mrd"]:
                delay = min(delay, max(0.0, e["first"] + e["mrd"] - now))
            self.imp.later(delay, lambda: self._transmit(e))
            return [self.frame(payload, e["unicast"])]

    def _exchange_failed(self, e) -> list:
        t = e["type"]
        if t == D.RENEW:
            self._start(D.REBIND, addresses=list(self.addresses))
        elif t == D.REBIND:
            self.addresses.clear()
            self.mem.pop("lease", None)
            self._start(D.SOLICIT)
        elif t == D.CONFIRM:
            self._bind_remembered()
        elif t == D.REQUEST:
            self._start(D.SOLICIT)
        else:
            self.state = "idle" if t in (D.RELEASE, D.DECLINE) and not self.addresses else self.state
            self.ex = None
        return []

    # -- answers in --------------------------------------------------------------------------------
    def _on_udp(self, pkt) -> list:
        udp = pkt[UDP]
        if udp.dport != D.CLIENT_PORT and not (self.k.get("any_port") and udp.sport == D.SERVER_PORT):
            return []
        m = D.parse(pkt)
        if m is None:
            return []
        if m.type in (*D.CLIENT_MESSAGES, D.RELAY_FORW, D.RELAY_REPL):
            if self.k.get("answers_client_messages"):
                reply = D.message(D.REPLY, m.xid, [D.opt(D.OPT_SERVERID, self.duid)] + (
                    [D.opt(D.OPT_CLIENTID, m.client_duid)] if m.client_duid else []))
                return [Ether(src=self.mac, dst=pkt[Ether].src) / IPv6(src=self.ll, dst=pkt[IPv6].src)
                        / UDP(sport=D.SERVER_PORT, dport=udp.sport) / Raw(reply)]
            return []
        if m.type == D.RECONFIGURE:
            if self.k.get("accept_reconfigure") and self.addresses:
                self._start(D.RENEW, addresses=list(self.addresses))
            return []
        e = self.ex
        if e is None or m.type not in (D.ADVERTISE, D.REPLY):
            return []
        invalid = m.server_duid is None or m.client_duid != self.duid or m.xid != e["xid"]
        if invalid and not self.k.get("accept_invalid"):
            return []  # §16.3, §16.10
        self.server_mac = pkt[Ether].src
        if m.type == D.ADVERTISE:
            return self._on_advertise(m, pkt) if e["type"] == D.SOLICIT else []
        return self._on_reply(m, e, pkt)

    def _on_advertise(self, m: D.Message, pkt) -> list:
        for o in m.all(D.OPT_SOL_MAX_RT):
            value = struct.unpack("!I", o.data)[0] if len(o.data) == 4 else 0
            if 60 <= value <= 86400 and not self.k.get("ignore_limits"):
                self.sol_max_rt = value
                self.ex["mrt"] = value
        unusable = (m.status and m.status[0] == D.NO_ADDRS_AVAIL) or not m.addresses()
        if unusable and not self.k.get("accept_invalid"):
            return []  # §18.2.9
        pref_opt = m.opt(D.OPT_PREFERENCE)
        pref = pref_opt.data[0] if pref_opt and pref_opt.data else 0
        self.advertises.append((pref, m))
        self.server_addr = pkt[IPv6].src
        e = self.ex
        after_first_rt = e["count"] >= 2
        if self.k.get("wait_after_rt"):
            return []  # picked at the next retransmission time
        if pref == 255 and self.k.get("collect_despite_255"):
            return []
        if pref == 255 or self.k.get("request_at_once") or (after_first_rt and not self.k.get("wait_after_rt")):
            return self._choose_advertise()
        return []

    def _choose_advertise(self) -> list:
        if not self.advertises:
            return []
        if self.k.get("ignore_preference"):
            _, best = self.advertises[0]
        else:
            best = max(self.advertises, key=lambda pm: pm[0])[1]
        self.server_duid = best.server_duid
        self.chosen = best
        self._start(D.REQUEST, addresses=None, delay=0)
        return []

    def _on_reply(self, m: D.Message, e, pkt) -> list:
        t = e["type"]
        status = m.status
        if t in (D.RELEASE, D.DECLINE):
            if not self.k.get("retransmit_after_reply"):
                e["cancelled"] = True
                self.ex = None
                self.state = "idle"
            return []
        if t == D.SOLICIT:
            if self.k.get("ignore_rapid_reply"):
                return []
            if m.opt(D.OPT_RAPID_COMMIT) and (self.k.get("rapid_commit") or self.k.get("accept_rapid_reply")):
                self.server_duid = m.server_duid
                return self._bind_from_reply(m)
            return []
        if t == D.INFORMATION_REQUEST:
            for o in m.all(D.OPT_INF_MAX_RT):
                if len(o.data) == 4 and 60 <= struct.unpack("!I", o.data)[0] <= 86400:
                    self.inf_max_rt = struct.unpack("!I", o.data)[0]
            if status and status[0] == D.UNSPEC_FAIL and not self.k.get("ignore_status"):
                return self._retry(e)
            e["cancelled"] = True
            self.state = "configured"
            refresh = D.IRT_DEFAULT
            for o in m.all(D.OPT_INFORMATION_REFRESH_TIME):
                if len(o.data) == 4:
                    refresh = max(D.IRT_MINIMUM, struct.unpack("!I", o.data)[0])  # §21.23
            self.imp.later(refresh, lambda: self._refresh())
            return []
        ignore = self.k.get("ignore_status")
        if status and not ignore:
            code = status[0]
            if code == D.UNSPEC_FAIL:
                return self._retry(e)
            if code == D.USE_MULTICAST:
                if self.k.get("ignore_use_multicast"):
                    e["cancelled"] = True
                    return []
                e["unicast"] = None
                return self._resend(e)
            if code == D.NOT_ON_LINK:
                self.addresses.clear()
                self.mem.pop("lease", None)
                self._start(D.SOLICIT)
                return []
        if t == D.CONFIRM:
            if self.k.get("solicit_after_confirm"):
                self.addresses.clear()
                self.mem.pop("lease", None)
                self._start(D.SOLICIT)
                return []
            return self._bind_remembered()
        ias = m.ia_nas
        if not ias and t in (D.RENEW, D.REBIND):
            return self._retry(e) if self.k.get("retry_at_once") else []  # as if no Reply (§18.2.10.1)
        for ia in ias:
            if ia.status and not ignore:
                if ia.status[0] == D.NO_BINDING and t in (D.RENEW, D.REBIND):
                    self._start(D.REQUEST, delay=0)
                    return []
                if ia.status[0] in (D.NO_ADDRS_AVAIL, D.NOT_ON_LINK):
                    self._start(D.SOLICIT, delay=1.0)
                    return []
        if ignore and t == D.REQUEST and not m.addresses() and self.chosen is not None:
            return self._bind_addresses(self.chosen.addresses(), 60, 120, (10, 16))
        if ignore and t in (D.RENEW, D.REBIND) and not m.addresses():
            e["cancelled"] = True
            self.state = "bound"
            self._schedule((10, 16))
            return []
        return self._bind_from_reply(m)

    def _refresh(self) -> list:
        with self.lock:
            if self.state == "configured":
                self._start(D.INFORMATION_REQUEST)
        return []

    def _retry(self, e) -> list:
        if self.k.get("retry_at_once"):
            return self._resend(e)
        return []  # the running retransmission timer resends at its RT (rate-limited)

    def _resend(self, e) -> list:
        payload = self.build(e["type"], e["xid"], int((time.monotonic() - (e["first"] or time.monotonic())) * 100),
                             e["addresses"])
        return [self.frame(payload)]

    def _bind_from_reply(self, m: D.Message) -> list:
        e = self.ex
        if e:
            e["cancelled"] = True
        t1 = t2 = 0
        listed = set()
        for ia in m.ia_nas:
            if ia.t1 and ia.t2 and ia.t1 > ia.t2 and not self.k.get("accept_invalid"):
                continue  # §21.4: discard the IA_NA
            t1, t2 = ia.t1, ia.t2
            for a in ia.addresses:
                addr = _norm(a.address)
                listed.add(addr)
                if a.preferred > a.valid and not self.k.get("accept_invalid"):
                    continue  # §21.6: discard the address
                if a.valid == 0:
                    if not self.k.get("keep_zero_lifetime"):
                        self.addresses.pop(addr, None)
                    continue
                if addr not in self.addresses and self.addresses and self.k.get("ignore_new_addresses"):
                    continue
                self._assign(addr, a.preferred, a.valid)
        if self.k.get("drop_unlisted"):
            for addr in list(self.addresses):
                if addr not in listed:
                    self.addresses.pop(addr)
        if not self.addresses:
            self.state = "soliciting"
            self._start(D.SOLICIT, delay=1.0)
            return []
        self.state = "bound"
        self.mem["lease"] = {"addresses": list(self.addresses), "server": self.server_duid}
        self._schedule((t1, t2))
        return []

    def _bind_addresses(self, addrs, preferred, valid, timers) -> list:
        if self.ex:
            self.ex["cancelled"] = True
        for a in addrs:
            self._assign(a, preferred, valid)
        self.state = "bound"
        self.mem["lease"] = {"addresses": list(self.addresses), "server": self.server_duid}
        self._schedule(timers)
        return []

    def _schedule(self, timers) -> None:
        for tm in self.lease_timers:
            tm.cancel()
        t1, t2 = timers
        pref = min((a["preferred"] for a in self.addresses.values()), default=60)
        t1 = t1 or max(1, pref // 2)
        t2 = t2 or max(t1 + 1, int(pref * 0.8))
        if self.k.get("ignore_t1"):
            t1 += 3
        now = time.monotonic()
        self.mem["t2_at"] = now + t2
        gen = object()
        self.mem["gen"] = gen

        def renew():
            with self.lock:
                if self.mem.get("gen") is gen and self.addresses:
                    self._start(D.RENEW, addresses=list(self.addresses), delay=0)
            return []

        self.lease_timers = [self.imp.later(t1, renew)]
        for until in sorted({a["until"] for a in self.addresses.values()}):
            self.lease_timers.append(self.imp.later(until - now + 0.05, self._expire_check))

    def _start_confirm(self) -> None:
        lease = self.mem["lease"]
        self.server_duid = lease.get("server")
        self._start(D.CONFIRM, addresses=lease["addresses"])

    def _bind_remembered(self) -> list:
        lease = self.mem.get("lease") or {}
        if self.ex:
            self.ex["cancelled"] = True
        return self._bind_addresses(lease.get("addresses", []), 60, 120, (0, 0))

    def release(self) -> None:
        addrs = list(self.addresses)
        if not addrs:
            return
        if not self.k.get("keep_released"):
            self.released.update(addrs)
            self.addresses.clear()
        else:
            self.released.update(addrs)
        for tm in self.lease_timers:
            tm.cancel()
        self.mem.pop("lease", None)
        self._start(D.RELEASE, addresses=addrs, delay=0)


def _norm(addr: str) -> str:
    import ipaddress

    return str(ipaddress.IPv6Address(addr))


@rule("dhcpv6_client")
def dhcpv6_client(pkt, dut, impostor=None, **knobs):
    """The simulated DHCPv6 client of the module docstring."""
    if impostor is None:
        return []
    client = impostor.state.get("client")
    if client is None:
        client = impostor.state["client"] = SimulatedClient(impostor, dut, knobs)
    return client.on_frame(pkt)
