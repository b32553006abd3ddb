"""A node one router hop from the DUT behind a narrower path (area plpmtud).

``far-path``: the node's interface gets ``ipv6`` and a default route via the
lab router, which gets ``router_ipv6`` on the node's link and forwards to it
with a locked route MTU of ``mtu`` (1280): the DUT's packets above it are
not forwarded.  The MTU is locked so that the hop does not depend on how a
kernel treats an unlocked route MTU for forwarded packets (IPv4 ignores an
unlocked one unless ip_forward_use_pmtu; the lab's kernel 6.18 honours both
for IPv6: measured, a 1400-octet ping got "Packet too big: mtu=1280" either
way); the links themselves stay at 1500, so the node's own MSS (1440)
invites full-size segments.

* ``drop_ptb: true``: the router's Packet Too Big messages are dropped on its
  output (nftables, with a counter): a black hole (RFC 2923, RFC 4821 §1),
  which only Packetization Layer PMTUD gets through;
* ``drop_ptb: false``: they reach the DUT (RFC 8201 works).

With ``open_ipv6`` / ``open_router_ipv6`` the node has a second address
in a second prefix that the router forwards at the link's full MTU: the
*open* path to the same node (the PLPMTUD gate compares the two; a client
picks its path by its source address).

``extension`` names the target setting the lab fills in with the node
(``extensions.plpmtud.<extension>``): ``client`` (the TCP checks' node,
``{netns, address, open_address}``) or ``datagram_client`` (RFC 8899's,
``{netns, address, path_mtu}``).

Stopping it removes the router's addresses, route and rule and the node's
addresses.  The node's TCP client is ``net/bulk_echo.py`` (run by the checks
and the gate in the node's namespace, named by the target's
``extensions.plpmtud.client``, which the lab fills in).
"""

from __future__ import annotations

import ipaddress

from ...util.proc import ip_batch, run
from . import Service, service

NFT_TABLE = "v6gate_plpmtud"


@service("far-path")
class FarPath(Service):
    defaults = {"ipv6": "2001:db8:3::c/64", "router_ipv6": "2001:db8:3::1/64", "mtu": 1280, "drop_ptb": True,
                "lock_mtu": True, "router": "router", "open_ipv6": None, "open_router_ipv6": None,
                "extension": "client"}

    def __init__(self, lab, node, spec):
        super().__init__(lab, node, spec)
        self._on = False

    def _router(self) -> tuple[str, str]:
        rnode = self.params["router"]
        return self.lab.ns(rnode), self.lab.topology.nodes[rnode].ifaces[self.spec.get("iface")].ifname

    def start(self) -> None:
        ifname, p = self.ifname(), self.params
        rns, rif = self._router()
        run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=0", f"net.ipv6.conf.{ifname}.disable_ipv6=0",
             f"net.ipv6.conf.{ifname}.accept_dad=0", f"net.ipv6.conf.{ifname}.accept_ra=0"],
            ns=self.ns, what="far-path sysctls")
        self._on = True
        gateway = p["router_ipv6"].split("/")[0]
        ip_batch([f"addr add {p['ipv6']} dev {ifname} nodad", f"route add default via {gateway} dev {ifname}"],
                 self.ns, what="far-path node")
        net = ipaddress.IPv6Interface(p["router_ipv6"]).network
        ip_batch([f"addr add {p['router_ipv6']} dev {rif} nodad",
                  f"route replace {net} dev {rif} metric 256 mtu {'lock ' if p['lock_mtu'] else ''}{int(p['mtu'])}"],
                 rns,
                 what="far-path router side")
        if p.get("open_ipv6") and p.get("open_router_ipv6"):
            ip_batch([f"addr add {p['open_ipv6']} dev {ifname} nodad"], self.ns, what="far-path node (open path)")
            ip_batch([f"addr add {p['open_router_ipv6']} dev {rif} nodad"], rns, what="far-path router (open path)")
        if p["drop_ptb"]:
            rules = (f"table inet {NFT_TABLE} {{\n  chain ptb_drop {{ type filter hook output priority 0; policy accept;\n"
                     "    icmpv6 type packet-too-big counter drop\n  }\n}\n")
            run(["nft", "-f", "-"], ns=rns, input=rules, what="far-path: drop the router's Packet Too Big")

    def stop(self) -> None:
        if not self._on:
            return
        ifname, p = self.ifname(), self.params
        rns, rif = self._router()
        try:
            if p["drop_ptb"]:
                run(["nft", "delete", "table", "inet", NFT_TABLE], ns=rns, check=False, what="far-path nft")
            ip_batch([f"addr del {p['router_ipv6']} dev {rif}"], rns, what="far-path router side")
            if p.get("open_ipv6") and p.get("open_router_ipv6"):
                ip_batch([f"addr del {p['open_router_ipv6']} dev {rif}"], rns, what="far-path router (open path)")
            ip_batch([f"addr flush dev {ifname}"], self.ns, what="far-path node")
            run(["sysctl", "-q", "-w", f"net.ipv6.conf.{ifname}.disable_ipv6=1", "net.ipv6.conf.all.disable_ipv6=1"],
                ns=self.ns, what="far-path sysctls")
        finally:
            self._on = False

    def running(self) -> bool:
        return self._on

    @property
    def address(self) -> str:
        return self.params["ipv6"].split("/")[0]

    @property
    def open_address(self) -> str | None:
        return self.params["open_ipv6"].split("/")[0] if self.params.get("open_ipv6") else None

    def target_setting(self) -> tuple[str, dict]:
        """(the key under extensions.plpmtud, its value) that names this node in the lab's target."""
        if self.params["extension"] == "datagram_client":
            return "datagram_client", {"netns": self.ns, "address": self.address, "path_mtu": int(self.params["mtu"])}
        client = {"netns": self.ns, "address": self.address}
        if self.open_address:
            client["open_address"] = self.open_address
        return "client", client
