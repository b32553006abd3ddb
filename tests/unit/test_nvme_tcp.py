"""NVMe/TCP host framing (net/nvme_tcp.py), the Discovery Log Page judgement
(checks/storage/nvme.py): pure logic;
the controller side of the framing tests is a socketpair fed with the PDUs a
controller sends."""

import socket
import struct
import threading

import pytest

from v6gate.checks.storage.nvme import judge_log_entries
from v6gate.net import nvme_tcp as N


def entry(trtype=3, adrfam=2, subtype=2, traddr="2001:db8:1::4420", trsvcid="4420", subnqn="nqn.x:y") -> bytes:
    e = bytearray(1024)
    struct.pack_into("<BBBBHHH", e, 0, trtype, adrfam, subtype, 0, 1, 0xFFFF, 32)
    e[32:32 + len(trsvcid)] = trsvcid.encode()
    e[256:256 + len(subnqn)] = subnqn.encode()
    e[512:512 + len(traddr)] = traddr.encode()
    return bytes(e)


def log_page(*entries: bytes, genctr=7) -> bytes:
    head = bytearray(1024)
    struct.pack_into("<QQH", head, 0, genctr, len(entries), 0)
    return bytes(head) + b"".join(entries)


def test_icreq_is_128_bytes_with_its_header():
    pdu = N.icreq()
    assert len(pdu) == 128
    assert struct.unpack_from("<BBBBI", pdu) == (N.ICREQ, 0, 128, 0, 128)


def test_connect_capsule_layout():
    data = bytes(1024)
    spec = struct.pack("<HHHBBI", 0, 0, 31, 0, 0, 0)
    pdu = N.capsule(N.sqe(N.FABRICS, 9, fctype=N.CONNECT, sgl=(N.SGL_INCAPSULE, 1024), cdw10=spec), data)
    assert struct.unpack_from("<BBBBI", pdu) == (N.CAPSULE_CMD, 0, 72, 72, 72 + 1024)
    sqe = pdu[8:72]
    assert (sqe[0], sqe[1], struct.unpack_from("<H", sqe, 2)[0], sqe[4]) == (0x7F, 0x40, 9, N.CONNECT)
    assert struct.unpack_from("<I", sqe, 32)[0] == 1024 and sqe[39] == N.SGL_INCAPSULE
    assert struct.unpack_from("<HH", sqe, 42) == (0, 31)  # qid, sqsize


def test_parse_log_reads_header_and_entries():
    page = log_page(entry(), entry(adrfam=1, subtype=1, traddr="198.18.1.3", trsvcid="8009"))
    log = N.parse_log(page)
    assert (log["genctr"], log["numrec"]) == (7, 2)
    assert log["entries"][0] == {"trtype": "tcp", "adrfam": "ipv6", "subtype": "nvme", "portid": 1,
                                 "cntlid": 0xFFFF, "asqsz": 32, "trsvcid": "4420", "subnqn": "nqn.x:y",
                                 "traddr": "2001:db8:1::4420"}
    assert log["entries"][1]["adrfam"] == "ipv4" and log["entries"][1]["subtype"] == "referral"


def _e(**kw):
    base = {"trtype": "tcp", "adrfam": "ipv6", "subtype": "nvme", "subnqn": "nqn.x:y", "trsvcid": "4420",
            "traddr": "2001:db8:1::4420"}
    return {**base, **kw}


@pytest.mark.parametrize("e, words", [
    (_e(adrfam="ipv4", traddr="198.18.1.3"), "has ADRFAM ipv4 and TRADDR '198.18.1.3', not IPv6"),
    (_e(traddr="fe80::1%eth0"), "is a link-local address"),
    (_e(traddr="2001:db8:1::4420%eth0"), "carries a zone (%eth0)"),
    (_e(traddr="::1"), "is the loopback address"),
    (_e(traddr="198.18.1.3"), "is an IPv4 address under ADRFAM IPv6"),
    (_e(traddr="array-a.example"), "is not an IPv6 address"),
    (_e(trsvcid="nvme"), "is not a TCP port"),
])
def test_each_bad_entry_is_named(e, words):
    problems = judge_log_entries([_e(), e])
    assert len(problems) == 1 and words in problems[0] and problems[0].startswith("entry 1 "), problems


def test_good_entries_and_non_ip_transports_pass():
    assert judge_log_entries([_e(), _e(subtype="current-discovery"), _e(trtype="fc", adrfam="fc", traddr="nn-0x1")]) == []


def _controller(pdus: list[bytes]):
    """A socketpair whose far end reads what the host sends and answers with ``pdus`` (after the ICReq)."""
    host, ctrl = socket.socketpair()
    host.settimeout(5)

    def serve():
        ctrl.recv(128)  # ICReq
        ctrl.sendall(pdus[0])
        ctrl.recv(72)  # the command capsule
        for p in pdus[1:]:
            ctrl.sendall(p)
        while ctrl.recv(4096):  # until the host closes
            pass

    threading.Thread(target=serve, daemon=True).start()
    return host


def _icresp() -> bytes:
    return struct.pack("<BBBBIHBBI", N.ICRESP, 0, 128, 0, 128, 0, 0, 0, 1 << 20) + bytes(112)


def _c2h(cid, off, data, flags=0) -> bytes:
    return struct.pack("<BBBBIHHIII", N.C2H_DATA, flags, 24, 24, 24 + len(data), cid, 0, off, len(data), 0) + data


def _resp(cid, status=0, dw0=0) -> bytes:
    return struct.pack("<BBBBIIIHHHH", N.CAPSULE_RESP, 0, 24, 0, 24, dw0, 0, 0, 0, cid, status)


def _host(pdus) -> N.Host:
    h = N.Host.__new__(N.Host)
    h.sock, h.cid = _controller([_icresp(), *pdus]), 0
    h.sock.sendall(N.icreq())
    ptype, _, hdr, _ = N.recv_pdu(h.sock)
    assert ptype == N.ICRESP and struct.unpack_from("<I", hdr, 12)[0] == 1 << 20
    return h


def test_data_in_two_c2h_pdus_is_assembled_by_offset():
    page = log_page(entry())
    h = _host([_c2h(1, 1024, page[1024:]), _c2h(1, 0, page[:1024], flags=N.C2H_LAST), _resp(1)])
    assert N.parse_log(h.get_log(N.LOG_DISCOVERY, 2048))["entries"][0]["traddr"] == "2001:db8:1::4420"


def test_c2h_success_flag_completes_without_a_response_capsule():
    h = _host([_c2h(1, 0, bytes(1024), flags=N.C2H_LAST | N.C2H_SUCCESS)])
    assert len(h.get_log(N.LOG_DISCOVERY, 1024)) == 1024


def test_a_failed_command_and_a_termination_are_the_controllers_errors():
    h = _host([_resp(1, status=(0x02 << 1))])
    with pytest.raises(N.NvmeError, match="status code 0x2"):
        h.prop_get(N.REG_CSTS)
    h = _host([struct.pack("<BBBBIH", N.C2H_TERM, 0, 24, 0, 24, 0x0001) + bytes(14)])
    with pytest.raises(N.NvmeError, match="C2HTermReq"):
        h.prop_get(N.REG_CSTS)


def test_data_outside_the_buffer_is_refused():
    h = _host([_c2h(1, 1000, bytes(100))])
    with pytest.raises(N.NvmeError, match="does not fit"):
        h.get_log(N.LOG_DISCOVERY, 1024)


def test_console_exec_reads_between_its_markers(tmp_path):
    """The VM's console may still hold the shell's banner and prompt: only what the
    command printed between the begin and end markers is its output."""
    import re

    from v6gate.lab.services.vm_target import console_exec

    path = str(tmp_path / "console.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(1)

    def serve():
        c, _ = srv.accept()
        c.sendall(b"BusyBox v1.35.0 built-in shell (ash)\r\n/ # ")
        line = c.recv(4096).decode()
        tag = re.search(r"V6G-BEGIN-(\w+)", line).group(1)
        c.sendall(f"V6G-BEGIN-{tag}\r\nport 1\r\nipv6\r\nV6G-END-{tag}-3\r\n/ # ".encode())
        c.close()

    threading.Thread(target=serve, daemon=True).start()
    assert console_exec(path, "cat x", timeout=5) == (3, "port 1\nipv6")
    srv.close()


def test_a_write_answers_each_r2t_with_h2cdata_in_maxh2cdata_pieces():
    """The controller asks for the data in two R2Ts; the host sends each window in H2CData PDUs of at most
    MAXH2CDATA bytes (here 1,000), the last of each window flagged LAST_PDU, then the completion arrives."""
    data = bytes(range(256)) * 10  # 2,560 bytes
    host_end, ctrl = socket.socketpair()
    host_end.settimeout(5)
    got = []

    def serve():
        ctrl.recv(128)
        ctrl.sendall(struct.pack("<BBBBIHBBI", N.ICRESP, 0, 128, 0, 128, 0, 0, 0, 1000) + bytes(112))
        ch = N.recv_exact(ctrl, 8)
        plen = struct.unpack_from("<I", ch, 4)[0]
        N.recv_exact(ctrl, plen - 8)  # the Write capsule
        for r2to, r2tl in ((0, 1500), (1500, 1060)):
            ctrl.sendall(struct.pack("<BBBBIHHIII", N.R2T, 0, 24, 0, 24, 1, 7, r2to, r2tl, 0))
            done = 0
            while done < r2tl:
                h = N.recv_exact(ctrl, 24)
                ptype, flags, _, _, plen, cid, ttag, off, n = struct.unpack_from("<BBBBIHHII", h, 0)
                got.append((ptype, flags, cid, ttag, off, n, N.recv_exact(ctrl, plen - 24)))
                done += n
        ctrl.sendall(_resp(1))

    threading.Thread(target=serve, daemon=True).start()
    h = N.Host.__new__(N.Host)
    h.sock, h.cid = host_end, 0
    h.sock.sendall(N.icreq())
    _, _, hdr, _ = N.recv_pdu(h.sock)
    h.icresp = {"maxh2cdata": struct.unpack_from("<I", hdr, 12)[0]}
    h.io(N.NVM_WRITE, 0, 5, 512, write=data)
    assert [(p[0], p[1], p[2], p[3], p[4], p[5]) for p in got] == [
        (N.H2C_DATA, 0, 1, 7, 0, 1000), (N.H2C_DATA, N.H2C_LAST, 1, 7, 1000, 500),
        (N.H2C_DATA, 0, 1, 7, 1500, 1000), (N.H2C_DATA, N.H2C_LAST, 1, 7, 2500, 60)]
    assert b"".join(p[6] for p in got) == data


def test_lba_format_reads_the_formatted_lba_size():
    ns = bytearray(4096)
    struct.pack_into("<Q", ns, 0, 16384)
    ns[26] = 1  # FLBAS: format 1
    ns[128 + 4 + 2] = 12  # LBAF1: LBADS 12 (4,096 bytes)
    assert N.lba_format(bytes(ns)) == (16384, 4096)
    ns[128 + 4 + 2] = 3
    with pytest.raises(N.NvmeError, match="LBA data size"):
        N.lba_format(bytes(ns))
