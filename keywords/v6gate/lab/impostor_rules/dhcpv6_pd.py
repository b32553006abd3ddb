"""The project's own simulated RFC 9762 client, for proving
``dhcpv6.p_flag_starts_prefix_delegation`` both ways
(tests/lab/test_simulated_clients.py): the lab's DUT (kernel SLAAC,
dhcpcd 9.4.1) does not act on the P flag.

On a Router Advertisement with a Prefix Information option whose P flag
is set it solicits a delegated prefix: a Solicit with an IA_PD, from the
DUT's link-local address to ff02::1:2.  With ``mistake: ia_na`` it solicits
an address (IA_NA) instead."""

from __future__ import annotations

import struct

from scapy.layers.inet6 import ICMPv6ND_RA, ICMPv6NDOptPrefixInfo
from scapy.layers.l2 import Ether

from ...net import dhcpv6 as D
from ...net.nd import PIO_P_FLAG
from ..impostor import rule
from .dhcpv6_addr_reg import _frame


@rule("pd_client")
def pd_client(pkt, dut, impostor, mistake: str | None = None, **_):
    if ICMPv6ND_RA not in pkt or pkt[Ether].src.lower() == dut["mac"].lower() or impostor.state.get("solicited"):
        return []
    opt = pkt[ICMPv6ND_RA].payload
    while opt:
        if isinstance(opt, ICMPv6NDOptPrefixInfo) and opt.res1 & PIO_P_FLAG:
            impostor.state["solicited"] = True
            ia = D.opt(D.OPT_IA_NA if mistake == "ia_na" else D.OPT_IA_PD, struct.pack("!III", 1, 0, 0))
            solicit = D.message(D.SOLICIT, D.fresh_xid(), [D.opt(D.OPT_CLIENTID, D.duid_ll(dut["mac"])),
                                                           D.opt(D.OPT_ELAPSED_TIME, b"\0\0"), ia])
            return [_frame(dut, dut["link_local"], solicit)]
        opt = opt.payload
    return []
