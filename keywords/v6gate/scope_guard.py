"""Scope guard: a test of a production network must be a decision, not an
accident.

v6gate's crafted packets (invalid Neighbor Discovery, impostor Router
Advertisements, floods for the gates) leave only through the tester
interface the target file declares: the tester port is an AF_PACKET socket
bound to that one interface (net/port.py), and nothing else sends.  Before a
run against a real device, this module refuses a target whose tester
interface is plainly not a dedicated test link:

* it carries one of this machine's default routes (IPv4 or IPv6): it is the
  management or production uplink;
* the target's link prefix is not on it: the interface has global IPv6
  addresses or routes, none of them in ``link.prefix`` (the target describes
  some other link).

A refusal is bad input (exit 2, one line).  ``--i-own-this-link`` overrides
it; the embedded lab (namespaces the harness built) is exempt.  The decision
is a pure function of the interface's facts (``decide``), read by
``link_facts`` with ``ip -j`` in the tester's namespace.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
from dataclasses import dataclass, field

OVERRIDE = "--i-own-this-link"


@dataclass
class LinkFacts:
    """What the machine says about the tester interface (in its namespace)."""

    default_route_ifaces: set[str] = field(default_factory=set)
    #: global (non-link-local) IPv6 networks of the interface's addresses and on-link routes
    v6_networks: list[ipaddress.IPv6Network] = field(default_factory=list)


def decide(iface: str, prefix: ipaddress.IPv6Network, facts: LinkFacts) -> str | None:
    """The reason to refuse this tester interface, or None."""
    if iface in facts.default_route_ifaces:
        return (f"tester.interface {iface} carries this machine's default route (a management or production "
                f"uplink); use a dedicated test link, or pass {OVERRIDE} if you own this link and mean it")
    globals_ = [n for n in facts.v6_networks if not n.is_link_local and not n.is_multicast]
    if globals_ and not any(n.overlaps(prefix) for n in globals_):
        shown = ", ".join(sorted({str(n) for n in globals_})[:3])
        return (f"link.prefix {prefix} is not on tester.interface {iface} (it has {shown}); describe the link "
                f"the tester is on, or pass {OVERRIDE} if you own this link and mean it")
    return None


def _ip_json(argv: list[str], ns: str | None) -> list:
    cmd = (["ip", "-n", ns] if ns else ["ip"]) + ["-j", *argv]
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    if cp.returncode != 0 or not cp.stdout.strip():
        return []
    try:
        return json.loads(cp.stdout)
    except ValueError:
        return []


def link_facts(iface: str, ns: str | None) -> LinkFacts:
    facts = LinkFacts()
    for fam in ("-4", "-6"):
        for r in _ip_json([fam, "route", "show", "default"], ns):
            if r.get("dev"):
                facts.default_route_ifaces.add(r["dev"])
            for nh in r.get("nexthops", []) or []:
                if nh.get("dev"):
                    facts.default_route_ifaces.add(nh["dev"])
    for link in _ip_json(["-6", "addr", "show", "dev", iface], ns):
        for a in link.get("addr_info", []):
            if a.get("scope") == "global":
                facts.v6_networks.append(ipaddress.IPv6Interface(f"{a['local']}/{a['prefixlen']}").network)
    for r in _ip_json(["-6", "route", "show", "dev", iface], ns):
        dst = r.get("dst", "")
        if dst and dst != "default" and "/" in dst and not r.get("gateway"):
            net = ipaddress.IPv6Network(dst, strict=False)
            if not net.is_link_local and not net.is_multicast:
                facts.v6_networks.append(net)
    return facts


def refusal(target, *, own_link: bool) -> str | None:
    """Why a run against ``target`` must not start (None: go)."""
    if own_link or target.lab is not None:
        return None
    return decide(target.tester_interface, target.link_prefix, link_facts(target.tester_interface, target.tester_netns))
