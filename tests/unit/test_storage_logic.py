"""Pure logic of the storage checks: iSCSI PDUs and TargetAddress parsing
(RFC 7143), rpcbind rows and universal addresses (RFC 5665)."""

import pytest

from v6gate.checks.storage._client import classify
from v6gate.checks.storage.iscsi import judge_target_addresses
from v6gate.checks.storage.nfs import judge_registrations, parse_rpcinfo, uaddr_problem
from v6gate.net import iscsi


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
