"""SMB3 multichannel over IPv6: the server's network-interface list
(FSCTL_QUERY_NETWORK_INTERFACE_INFO, MS-SMB2 §2.2.32.5)."""

from __future__ import annotations

import json

from ...core.check import check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...errors import BenchError
from ...net.smb import AF_INET6_SMB, parse_interfaces
from ...scenario import storage as C


@check(
    area="storage", ipv6ready=None,
    title="SMB3 interface list carries the DUT's IPv6 address in well-formed SOCKADDR_IN6 entries",
    rfc="MS-SMB2 §2.2.32.5 (NETWORK_INTERFACE_INFO: 152-byte entries, 128-byte SOCKADDR_STORAGE; "
        "§2.2.32.5.1.2 SOCKADDR_IN6, family 0x17), §3.3.5.15.11 (the server answers with its interfaces); "
        "RFC 3493 §3.3 (the sockaddr_in6 layout), RFC 4291 §2.5.6 (link-local: not usable off the link)",
    expect="FSCTL_QUERY_NETWORK_INTERFACE_INFO over an SMB 3.x session on the DUT's global IPv6 address returns "
           "a well-framed chain of entries, one of them a SOCKADDR_IN6 with that address; no IPv6 entry link-local "
           "or loopback",
    fault="dut_smb_interface_info_truncated",
    capabilities=["SMB"], dut_config="storage",
)
def interface_info_lists_ipv6_addresses(t: CheckContext):
    """A multichannel SMB3 client asks the server for its interfaces and
    opens further channels to the addresses listed.  An IPv6-only client
    can use only SOCKADDR_IN6 entries, and a mis-sized entry corrupts every
    entry after it (clients have crashed or ignored the whole list on such
    framing)."""
    dut, _svc, port, cl = C.endpoint(t, "SMB")
    creds = (C.settings(t.target).get("smb_user") or "").split("%", 1)
    since = t.now()
    rc, out, err = cl.python("v6gate.net.smb", ["interfaces", dut, str(port), *[c for c in creds if c]],
                             max(15.0, 5 * t.reply_timeout))
    try:
        answer = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise BenchError(f"the SMB client gave no answer (exit {rc}): {(err.strip() or 'no output')[-300:]}") from None
    if "error" in answer:
        err_text = answer["error"]
        if "ModuleNotFoundError" in err_text:
            raise BenchError(f"the SMB client needs smbprotocol (pip; tools/setup installs it): {err_text}")
        raise Deviation(f"FSCTL_QUERY_NETWORK_INTERFACE_INFO on [{dut}]:{port} failed: {err_text[:300]}; "
                         f"{C.dut_frames_summary(t, since, dut)}")
    buf = bytes.fromhex(answer["buffer"])
    entries, problems = parse_interfaces(buf)
    listed = [f"{e.address}" + (f"%{e.scope_id}" if e.scope_id else "") for e in entries if e.address]
    t.measure("interfaces", [{"family": e.family, "address": e.address, "ifindex": e.ifindex,
                              "link_speed": e.link_speed, "next": e.next} for e in entries])
    t.measure("buffer_bytes", len(buf))
    v6 = [e for e in entries if e.family == AF_INET6_SMB]
    for e in v6:
        bad = C.classify(e.address)
        if bad:
            problems.append(f"IPv6 entry {e.address} is {bad}")
    if not problems and not any(e.address == dut for e in v6):  # framing problems first: one cause, one line
        problems.append(f"no SOCKADDR_IN6 entry for {dut}, the address the session uses")
    if problems:
        raise Deviation("; ".join(problems) + f" ({len(buf)}-byte answer, dialect {answer.get('dialect')}, "
                         f"entries: {', '.join(listed) or 'none'})")
    return t.conclude(f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'} in a {len(buf)}-byte answer (dialect "
                       f"{answer.get('dialect')}): {', '.join(listed)}; every entry 152 bytes, SOCKADDR_IN6 for {dut}", [])
