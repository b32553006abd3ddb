"""The NFSv4 fs_locations client (net/nfs4.py: XDR of the COMPOUND and its
reply) and the referral judgement (checks/storage/nfs.py): pure logic on
byte strings built here as a server would send them."""

import struct

import pytest

from v6gate.checks.storage.nfs import judge_locations
from v6gate.net import nfs4 as N


def s(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)


def path(p: str) -> bytes:
    comps = [c for c in p.split("/") if c]
    return struct.pack(">I", len(comps)) + b"".join(s(c.encode()) for c in comps)


def reply(xid: int, ops: list[tuple[int, int, bytes]], status: int = 0) -> bytes:
    body = struct.pack(">III", xid, 1, 0) + struct.pack(">II", 0, 0) + struct.pack(">I", 0)
    body += struct.pack(">I", status) + s(b"") + struct.pack(">I", len(ops))
    for op, st, res in ops:
        body += struct.pack(">II", op, st) + res
    return body


def fattr(locations: list[tuple[list[str], str]], root="/ref") -> bytes:
    attrs = struct.pack(">QQ", 7, 9) + path(root) + struct.pack(">I", len(locations))
    for servers, rootpath in locations:
        attrs += struct.pack(">I", len(servers)) + b"".join(s(x.encode()) for x in servers) + path(rootpath)
    return struct.pack(">II", 1, (1 << N.FATTR4_FSID) | (1 << N.FATTR4_FS_LOCATIONS)) + s(attrs)


def test_the_call_is_one_record_with_putrootfh_lookups_and_getattr():
    ops, n = N.fs_locations_ops("/a/ref")
    call = N.compound_call(0x1234, ops, n)
    head = struct.unpack(">I", call[:4])[0]
    assert head & 0x80000000 and head & 0x7FFFFFFF == len(call) - 4
    assert struct.unpack_from(">IIIIII", call, 4) == (0x1234, 0, 2, N.NFS_PROGRAM, 4, 1)
    assert n == 4 and ops.endswith(struct.pack(">III", N.OP_GETATTR, 1, (1 << 8) | (1 << 24)))
    assert ops.count(struct.pack(">I", N.OP_LOOKUP)) == 2


def test_reply_with_fs_locations_decodes():
    r = N.parse_compound_reply(5, reply(5, [(24, 0, b""), (15, 0, b""), (9, 0, fattr([(["2001:db8::1", "nas-b"], "/data")]))]))
    assert r["status"] == "NFS4_OK" and [o["op"] for o in r["ops"]] == [24, 15, 9]
    assert r["attrs"]["fsid"] == [7, 9]
    assert r["attrs"]["fs_locations"] == {"fs_root": "/ref", "locations": [{"servers": ["2001:db8::1", "nas-b"],
                                                                           "rootpath": "/data"}]}


def test_a_failed_operation_ends_the_results():
    r = N.parse_compound_reply(5, reply(5, [(24, 0, b""), (15, N.NFS4ERR_MOVED, b"")], status=N.NFS4ERR_MOVED))
    assert r["status"] == "NFS4ERR_MOVED" and r["ops"][-1] == {"op": 15, "status": "NFS4ERR_MOVED"}
    assert r["attrs"] == {}


@pytest.mark.parametrize("data, words", [
    (reply(6, []), "xid 6"),
    (struct.pack(">III", 5, 1, 1), "denied"),
    (reply(5, [(9, 0, struct.pack(">II", 1, 1 << 3) + s(b"\0" * 8))]), "attribute 3, which was not asked for"),
    (reply(5, [(9, 0, struct.pack(">II", 1, 1 << 24) + s(b"\0\0"))]), "inside a 4-byte field"),
])
def test_answers_that_break_the_protocol_are_the_servers_errors(data, words):
    with pytest.raises(N.RpcError, match=words):
        N.parse_compound_reply(5, data)


def _fsl(*servers, rootpath="/data"):
    return {"fs_root": "/ref", "locations": [{"servers": list(servers), "rootpath": rootpath}]}


@pytest.mark.parametrize("fsl, words", [
    (_fsl("198.18.1.3"), "server '198.18.1.3' is an IPv4 address"),
    (_fsl("fe80::1"), "is a link-local address"),
    (_fsl("::ffff:198.18.1.3"), "IPv4-mapped"),
    (_fsl("2001:db8::1%eth0"), "carries a zone"),
    (_fsl("[2001:db8::1]"), "is bracketed"),
    (_fsl(), "names no server"),
    ({"fs_root": "/ref", "locations": []}, "name no location"),
    (None, "name no location"),
])
def test_each_bad_location_is_named(fsl, words):
    problems = judge_locations(fsl)
    assert len(problems) == 1 and words in problems[0], problems


def test_global_literals_and_names_pass():
    assert judge_locations(_fsl("2001:db8:1::4420", "nas-b.example")) == []
