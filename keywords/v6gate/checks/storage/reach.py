"""Each claimed storage service answers a real client on the DUT's global
IPv6 address, on an IPv6-only link, with no IPv4 on the wire.

Clients (chosen because each is the protocol's reference user-space
client, available on Debian 12, needing no kernel client module, which
this machine lacks): libiscsi's ``iscsi-ls`` (discovery + login + REPORT
LUNS), libnfs's ``nfs-ls`` (NFSv4 and NFSv3 with MOUNT), Samba's
``smbclient`` (SMB3 negotiate, session setup, share list).
"""

from __future__ import annotations

from ...core.check import Part, check
from ...core.context import CheckContext
from ...core.verdict import Deviation
from ...net.iscsi import INITIATOR
from ...scenario import storage as C

RFC = ("RFC 8200 §1 and OMB M-21-07 (IPv6-only operation: the service must work with no IPv4); "
       "RFC 7143 §4.2 / RFC 7530 §2.2 / RFC 1813 §2 / MS-SMB2 §2.1 (transport over TCP on any IP version)")


def _session(t: CheckContext, label: str, port: int, argv_or_fn) -> tuple[int | None, str, str, float]:
    since = t.now()
    rc, out, err = argv_or_fn()
    t.wait(0.3)  # the last frames of the session reach the capture
    return rc, out, err, since


@check(
    area="storage", ipv6ready=None,
    title="A claimed storage service answers on the DUT's global IPv6 address with no IPv4 on the wire",
    rfc=RFC,
    expect="the client completes its session (login, mount, share list) over IPv6 to the DUT's global address; "
           "no IPv4 frame from the DUT in the session",
    parts=[
        Part("A", "iSCSI: discovery and login (iscsi-ls)", proto="iSCSI", capabilities=["iSCSI"],
             fault="dut_iscsi_portal_ipv4_only"),
        Part("B", "NFSv4: LOOKUP and READDIR of the pseudo root (nfs-ls version=4)", proto="NFS", version="4",
             capabilities=["NFS"], fault="dut_nfs_answers_only_over_ipv4"),
        Part("C", "NFSv3: rpcbind, MOUNT and READDIR (nfs-ls version=3)", proto="NFS", version="3",
             capabilities=["NFS"], fault="dut_nfs_answers_only_over_ipv4"),
        Part("D", "SMB3: negotiate, session setup, share list (smbclient -m SMB3)", proto="SMB",
             capabilities=["SMB"], fault="dut_smb_answers_only_over_ipv4"),
        Part("E", "SMB3 session with the DUT also sending IPv4 (no fallback traffic)", proto="SMB",
             capabilities=["SMB"], fault="dut_sends_ipv4_beside_its_storage_sessions",
             expect="the SMB3 session completes and the DUT sends no IPv4 frame during it"),
    ],
    capabilities=[], dut_config="storage", liveness="ns",
)
def service_answers_over_ipv6_only(t: CheckContext):
    """An IPv6-only network has no IPv4 to fall back to: a storage service
    the DUT claims must accept a client's session on its global IPv6
    address, and the DUT must not send IPv4 (ARP, broadcasts, an IPv4
    portal) while serving it."""
    dut, svc, port, cl = C.endpoint(t, t.p.proto)
    limit = max(10.0, 5 * t.reply_timeout)
    if t.p.proto == "iSCSI":
        what = f"iscsi-ls to iscsi://[{dut}]:{port}"
        rc, out, err, since = _session(t, what, port, lambda: cl.run(
            ["iscsi-ls", "-i", INITIATOR, "-s", f"iscsi://[{dut}]:{port}"], limit))
        ok = rc == 0 and "Target:" in out
    elif t.p.proto == "NFS":
        path = svc.get("pseudo", "/") if t.p.version == "4" else svc.get("export")
        if t.p.version == "3" and not path:
            path = C.lab_export(t)
        if t.p.version not in [str(v).split(".")[0] for v in svc.get("versions", ["3", "4"])]:
            raise C.NotApplicable(f"the target's NFS service does not offer version {t.p.version} (services[].versions)")
        # libnfs rejects bracketed IPv6 in URLs (lab-notes): the bare address
        url = f"nfs://{dut}{path}?version={t.p.version}"
        what = f"nfs-ls {url}"
        rc, out, err, since = _session(t, what, port, lambda: cl.run(["nfs-ls", url], limit))
        ok = rc == 0
    else:
        what = f"smbclient -L {dut} -m SMB3"
        rc, out, err, since = _session(t, what, port, lambda: cl.smbclient(
            ["-N", "-L", dut, "-m", "SMB3", "-p", str(port)], limit))
        share = svc.get("share")
        ok = "Sharename" in out and (not share or share in out)
    frames = C.session_frames(t, since, dut, port)
    t.measure("session_frames", len(frames))
    if not ok:
        detail = (err.strip() or out.strip()).splitlines()[-1:] or ["no output"]
        reason = "timed out" if rc is None else f"exit {rc}: {detail[0][:200]}"
        raise Deviation(f"{what} failed ({reason}); {len(frames)} IPv6 frames to/from port {port}; "
                         f"{C.dut_frames_summary(t, since, dut)}")
    leak = C.ipv4_problem(t, since)
    if leak:
        raise Deviation(f"{leak}; the session itself completed over IPv6 ({len(frames)} frames)")
    if not frames and t.session.captures_the_link:
        from ...errors import BenchError

        raise BenchError(f"{what} succeeded but the tester captured none of its frames (the lab's hub mode is off?)")
    return t.conclude(f"{what} completed over IPv6 ({len(frames)} frames between {cl.address or 'the client'} and "
                       f"[{dut}]:{port}); no IPv4 frame from the DUT", [])

