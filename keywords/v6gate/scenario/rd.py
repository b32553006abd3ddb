"""Constants and helpers shared by the router-discovery checks (not a check module)."""

from __future__ import annotations

import secrets

from scapy.layers.inet6 import (
    ICMPv6ND_NS,
)

from ..core.context import CheckContext
from ..net.nd import fresh_prefix, prefix_option, router_advertisement
from .observe import (
    dad_probe_in,
    echo_hop_limit,
)

#: RFC 4861 §10 node constants
DELAY_FIRST_PROBE_TIME = 5.0
MAX_UNICAST_SOLICIT = 3


def _ra_effects(t: CheckContext, router, prefix, chlim: int, since: float) -> list[str]:
    """What shows that the DUT processed an RA: an address formed from its
    prefix (a DAD probe) or its Cur Hop Limit on the DUT's packets."""
    seen = []
    dad = dad_probe_in(t, prefix, since) if prefix is not None else None
    if dad is not None:
        seen.append(f"it probed {dad.pkt[ICMPv6ND_NS].tgt} from the RA's prefix {prefix} (DAD NS)")
    hlim, all_hlims = echo_hop_limit(t, t.node("TN1"))
    if chlim in all_hlims:
        seen.append(f"its Echo Reply carried the RA's Cur Hop Limit {chlim}")
    elif hlim is None:
        seen.append("it no longer answered an Echo Request")
    return seen


def _valid_ra_takes_effect(t: CheckContext, router, avoid_hop_limit: int | None) -> tuple[bool, str]:
    """After a part that requires an RA to be discarded: a valid RA (fresh
    prefix, new Cur Hop Limit, Router Lifetime 0 so it installs no router)
    must take effect, or the DUT may simply ignore every RA and the discard
    proves nothing.  (took effect, what was seen)."""
    prefix = fresh_prefix(avoid=t.target.link_prefix)
    chlim = _random_hop_limit(avoid=avoid_hop_limit or 64)
    lease = t.lease_for_probes(0, rebuilt=30)  # its DAD probe is all this needs (the Echo goes to the link-local)
    since = t.send(router_advertisement(router, router_lifetime=0, cur_hop_limit=chlim,
                                        prefixes=[prefix_option(prefix, valid=lease, preferred=lease)]),
                   label=f"valid RA (Cur Hop Limit {chlim}, prefix {prefix}): its effect is required")
    effects = _ra_effects(t, router, prefix, chlim, since)
    if any("no longer answered" in e for e in effects) or not effects:
        return False, (f"then a valid RA (Cur Hop Limit {chlim}, prefix {prefix}) had no effect either (no DAD "
                       f"probe, hop limit not applied): the DUT ignores every RA, so the discard proves nothing")
    return True, f"a valid RA afterwards took effect ({'; '.join(effects)})"


def _random_hop_limit(avoid: int = 64) -> int:
    while True:
        h = 100 + secrets.randbelow(150)
        if h != avoid:
            return h


_INVALID_RA_PARTS = {
    "global_source": "source is a global address, not link-local",
    "hop_limit_254": "IP Hop Limit 254, not 255",
    "bad_checksum": "ICMP checksum not valid",
    "code_1": "ICMP Code 1, not 0",
    "short_length": "ICMP length 14, less than 16 octets",
    "zero_length_option": "an option of length 0",
}
