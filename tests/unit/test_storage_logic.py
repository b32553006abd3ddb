"""Pure logic of the storage checks: iSCSI PDUs and TargetAddress parsing
(RFC 7143), rpcbind rows and universal addresses (RFC 5665)."""

import pytest

from v6gate.checks.storage.iscsi import judge_target_addresses
from v6gate.checks.storage.nfs import judge_registrations, parse_rpcinfo, uaddr_problem
from v6gate.net import iscsi
from v6gate.scenario.storage import classify


@pytest.mark.parametrize("text,host,port,tpgt,bracketed", [
    ("[2001:db8:1::10]:3260,1", "2001:db8:1::10", 3260, 1, True),
    ("[2001:db8:1::10]", "2001:db8:1::10", None, None, True),
    ("198.18.1.2:3260,1", "198.18.1.2", 3260, 1, False),
    ("array.example.com:3260,2", "array.example.com", 3260, 2, False),
])
def test_target_address_forms(text, host, port, tpgt, bracketed):
    ta = iscsi.parse_target_address(text)
    assert (ta.host, ta.port, ta.tpgt, ta.bracketed) == (host, port, tpgt, bracketed)


@pytest.mark.parametrize("text,problem", [
    ("2001:db8:1::10:3260,1", "must be in brackets"),
    ("[198.18.1.2]:3260,1", "not an IPv6 address"),
    ("[2001:db8::1]:99999,1", "out of range"),
    ("[2001:db8::1", "not domainname"),
])
def test_malformed_target_addresses_say_what_is_wrong(text, problem):
    with pytest.raises(ValueError, match=problem):
        iscsi.parse_target_address(text)


def test_sendtargets_judgement_names_each_bad_portal():
    pairs = [("TargetName", "iqn.x:a"), ("TargetAddress", "[2001:db8:1::10]:3260,1"),
             ("TargetAddress", "[fe80::1]:3260,1"), ("TargetName", "iqn.x:b"),
             ("TargetAddress", "198.18.1.2:3260,1"), ("TargetAddress", "[::1]:3260,1")]
    problems, portals = judge_target_addresses(pairs)
    assert len(portals) == 4
    assert problems == ["TargetAddress [fe80::1]:3260,1 of iqn.x:a is a link-local address (not usable off its "
                        "link, and ambiguous without a zone)",
                        "TargetAddress 198.18.1.2:3260,1 of iqn.x:b is an IPv4 address",
                        "TargetAddress [::1]:3260,1 of iqn.x:b is the loopback address"]


def test_login_and_text_pdus_round_trip():
    req = iscsi.pdu(iscsi.OP_LOGIN_REQ, 0x80, csg_nsg=0x03, data=iscsi.keys_bytes([("SessionType", "Discovery")]))
    assert len(req) % 4 == 0 and req[0] == 0x43 and req[1] == 0x83
    assert int.from_bytes(req[5:8], "big") == len(b"SessionType=Discovery\0")
    rsp = iscsi.rsp_pdu(iscsi.OP_TEXT_RSP, 0x80, req[:48], 7, iscsi.keys_bytes([("TargetName", "iqn.x:a")]))
    assert rsp[16:20] == req[16:20] and int.from_bytes(rsp[24:28], "big") == 7
    assert iscsi.parse_keys(rsp[48:]) == [("TargetName", "iqn.x:a")]


RPCINFO = """\
   program version netid     address                service    owner
    100000    4    tcp6      ::.0.111               portmapper superuser
    100003    3    tcp6      ::.8.1                 nfs        superuser
    100003    3    tcp       0.0.0.0.8.1            nfs        superuser
    100005    3    tcp6      2001:db8:1::10.78.80   mountd     superuser
    100005    3    udp6      fe80::1.78.80          mountd     superuser
"""


def test_rpcbind_rows_and_universal_addresses():
    rows = parse_rpcinfo(RPCINFO)
    assert [r["netid"] for r in rows] == ["tcp6", "tcp6", "tcp", "tcp6", "udp6"]
    assert uaddr_problem("tcp6", "::.8.1") is None
    assert "port octets" in uaddr_problem("tcp6", "2001:db8::1.2049")
    assert "IPv4 address under an IPv6 netid" in uaddr_problem("tcp6", "198.18.1.2.8.1")
    problems, _ = judge_registrations(rows, [3])
    assert problems == ["MOUNT v3 udp6 fe80::1.78.80: a link-local address (not usable off its link, and ambiguous "
                        "without a zone)"]
    problems, _ = judge_registrations([r for r in rows if r["netid"] == "tcp"], [3])
    assert problems[0] == "NFS v3 has no tcp6 registration (registered: tcp)"


def test_classify():
    assert classify("2001:db8::1") is None
    assert classify("::ffff:198.18.1.2") == "an IPv4-mapped address"
    assert classify("fe80::1", link_is_global=False) is None
    assert classify("array.example.com") is None


# -- SMB3 NETWORK_INTERFACE_INFO (MS-SMB2 §2.2.32.5), as the lab's samba 4.17 answered -----------------
SAMBA_ANSWER = bytes.fromhex(
    "0000000002000000000000000000000000e40b5402000000170000000000000020010db800010000000000fffe000002"
    + "00" * 104)


def test_interface_info_entry_is_parsed_from_samba_answer():
    from v6gate.net.smb import AF_INET6_SMB, parse_interfaces

    entries, problems = parse_interfaces(SAMBA_ANSWER)
    assert problems == []
    assert [(e.family, e.address, e.ifindex, e.link_speed) for e in entries] == [
        (AF_INET6_SMB, "2001:db8:1::ff:fe00:2", 2, 10_000_000_000)]


def test_interface_info_framing_problems_are_named():
    from v6gate.net.smb import parse_interfaces

    _, problems = parse_interfaces(SAMBA_ANSWER[:136])
    assert problems == ["entry at offset 0: only 136 bytes left, an entry is 152 (truncated)"]
    bad_next = (136).to_bytes(4, "little") + SAMBA_ANSWER[4:] + SAMBA_ANSWER
    _, problems = parse_interfaces(bad_next)
    assert problems == ["entry at offset 0: Next = 136, not an 8-byte aligned offset of at least 152 (the entry's size)"]
    v4 = bytearray(SAMBA_ANSWER)
    v4[24:26] = b"\x05\x00"
    _, problems = parse_interfaces(bytes(v4))
    assert "address family 0x0005" in problems[0]


def test_truncating_rewrite_keeps_length_and_fixes_the_tcp_checksum():
    import struct

    from scapy.layers.inet import TCP
    from scapy.layers.inet6 import IPv6

    from v6gate.lab.repair_rules.storage import smb_interface_info_truncated

    smb = bytearray(64)
    smb[0:4] = b"\xfeSMB"
    struct.pack_into("<H", smb, 12, 0x000B)
    struct.pack_into("<I", smb, 16, 1)  # a response
    body = bytearray(48)
    struct.pack_into("<HHI", body, 0, 49, 0, 0x001401FC)
    struct.pack_into("<IIII", body, 24, 0, 0, 64 + 48, len(SAMBA_ANSWER))
    pdu = bytes(smb + body) + SAMBA_ANSWER
    pkt = bytes(IPv6(src="2001:db8:1::2", dst="2001:db8:1::c") / TCP(sport=445, dport=40000, flags="PA")
                / (len(pdu).to_bytes(4, "big") + pdu))
    out = smb_interface_info_truncated(pkt, {}, cut=16)
    assert len(out) == len(pkt)
    assert struct.unpack_from("<I", out, 40 + 20 + 4 + 64 + 36)[0] == len(SAMBA_ANSWER) - 16
    rebuilt = IPv6(out)
    chk = rebuilt[TCP].chksum
    del rebuilt[TCP].chksum
    assert IPv6(bytes(rebuilt))[TCP].chksum == chk
    assert smb_interface_info_truncated(bytes(IPv6() / TCP()), {}) is None


def test_a_missing_client_namespace_is_the_bench_s_error_not_a_fail(tmp_path):
    from v6gate.errors import BenchError
    from v6gate.scenario.storage import Client

    with pytest.raises(BenchError, match="storage client's namespace 'v6gate-no-such-ns' does not exist"):
        Client("v6gate-no-such-ns", "2001:db8:1::c", tmp_path).run(["true"], 5)


def test_a_malformed_iqn_in_a_storage_target_file_is_one_line(tmp_path):
    from v6gate.core.target import load_target
    from v6gate.errors import TargetFileError
    from v6gate.paths import FIXTURES

    text = (FIXTURES / "targets" / "example-storage.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("iqn: iqn.2026-11.com.example:sa9000.lun0", 'iqn: "sa9000 lun0"'))
    assert load_target(FIXTURES / "targets" / "example-storage.yaml").kind == "storage"
    with pytest.raises(TargetFileError, match=r"services\[0\]\.iqn: 'sa9000 lun0' is not valid; an iSCSI target name"):
        load_target(bad)


def test_scsi_command_pdu_carries_lun_itt_length_and_cdb():
    import struct

    from v6gate.net.iscsi import Session

    s = Session.__new__(Session)
    sent = []
    s.sock = type("S", (), {"sendall": lambda self, b: sent.append(b)})()
    s.lun, s.cmdsn, s.expstatsn, s.itt = struct.pack(">HHI", 1, 0, 0), 7, 3, 0x100
    cdb = struct.pack(">BBIBHB", 0x2A, 0, 0, 0, 8, 0)
    itt = s._cmd(0x20, cdb, 4096)
    bhs = sent[0]
    assert len(bhs) == 48 and bhs[0] == 0x01 and bhs[1] == 0x80 | 0x20 | 0x01
    assert bhs[8:10] == b"\x00\x01" and struct.unpack(">IIII", bhs[16:32]) == (itt, 4096, 7, 3)
    assert bhs[32:42] == cdb and s.cmdsn == 8
