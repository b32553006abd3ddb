"""The passive audit: on the sample captures made in the lab its verdicts
agree with the active checks that ran while they were captured; it reads
any size in bounded chunks with the same result; bad files get a one-line
error; the per-host rules decide what the wire shows (tshark needed, no root)."""

import json
import shutil
import subprocess
import sys

import jsonschema
import pytest

from v6gate.audit.capture import seed_frames, synthesize
from v6gate.audit.findings import ACTIVE
from v6gate.audit.fixtures import CAPTURES, SAMPLES
from v6gate.audit.hosts import Audit
from v6gate.audit.labrun import active_verdicts
from v6gate.audit.run import audit_capture
from v6gate.audit.tshark import FIELDS, F
from v6gate.errors import UsageError
from v6gate.paths import REPORTS, ROOT
from v6gate.report.results import all_checks

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (tools/setup)")


def verdicts_of(doc, mac):
    return {c["id"]: c["verdict"] for c in all_checks(doc) if c["part"] == mac}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_audit_agrees_with_the_active_checks_run_on_the_captured_lab(name, tmp_path):
    record = json.loads((CAPTURES / f"{name}.json").read_text())
    _, doc = audit_capture(CAPTURES / f"{name}.pcapng", hosts=[record["dut_mac"]], out=tmp_path, jobs=1)
    audited = verdicts_of(doc, record["dut_mac"])
    active = active_verdicts(record)
    assert active, f"{name}: no active check behind any finding ran on this capture"
    for finding, verdict in active.items():
        assert audited[finding] == verdict, (f"{name}: {finding} is {audited[finding]} on the capture but the active "
                                             f"check {ACTIVE[finding]} gave {verdict}")
    ready = audited["audit.ipv6_only_readiness"]
    assert ready == ("FAIL" if "FAIL" in audited.values() else "PASS")


def test_the_healthy_host_is_ready_and_every_finding_is_decided(tmp_path):
    _, doc = audit_capture(CAPTURES / "v6only-host.pcapng", hosts=["02:00:00:00:00:02"], out=tmp_path, jobs=1)
    v = verdicts_of(doc, "02:00:00:00:00:02")
    assert v["audit.ipv6_only_readiness"] == "PASS"
    assert set(v.values()) == {"PASS"}, v  # DHCPv4 with 108, an OFFER with 108, DNS: the capture shows all of them
    ready = next(c for c in all_checks(doc) if c["id"] == "audit.ipv6_only_readiness")
    share = ready["measurements"]["ipv6_share_percent"]
    assert 50 < share < 100, "DHCPv4 asking for option 108 is allowed but is still IPv4"
    stops = next(c for c in all_checks(doc) if c["id"] == "audit.dhcpv4_stops_after_option_108")
    assert stops["measurements"]["option_108_s"] == 300, "the option's value comes from Scapy (tshark shows bytes)"
    assert doc["run"]["audit"]["scapy_decoded_frames"] >= 1


def test_results_and_reports_are_written_and_schema_valid(tmp_path):
    paths, doc = audit_capture(CAPTURES / "dual-stack-host.pcapng", out=tmp_path, jobs=1)
    schema = json.loads((REPORTS / "schema" / "results.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(json.loads(open(paths["results"]).read()))
    html = open(paths["html"]).read()
    assert "IPv6-only readiness per host" in html and "02:00:00:00:00:02" in html
    assert doc["summary"]["exit_code"] == 1, "the dual-stack host sends IPv4: a FAIL"
    for c in all_checks(doc):
        assert c["evidence"]["pcap"] in c["reason"]


def test_chunks_and_parallel_tshark_give_the_same_verdicts(tmp_path):
    seeds = seed_frames(sorted(CAPTURES.glob("*.pcapng")))
    big = tmp_path / "synthetic.pcap"
    n = synthesize(big, seeds, 12_000, hosts=15)
    _, whole = audit_capture(big, out=tmp_path / "whole", jobs=1, chunk_frames=100_000, engine="tshark")
    _, chunked = audit_capture(big, out=tmp_path / "chunked", jobs=2, chunk_frames=1000, engine="tshark")
    assert whole["run"]["audit"]["packets"] == chunked["run"]["audit"]["packets"] == n
    assert chunked["run"]["audit"]["chunks"] == 12

    def key(doc):
        return sorted((c["id"], c["part"], c["verdict"], c["seen"]) for c in all_checks(doc))

    assert key(whole) == key(chunked)
    assert whole["run"]["audit"]["hosts_seen"] >= 15


def test_a_truncated_capture_is_a_one_line_usage_error(tmp_path):
    data = (CAPTURES / "v6only-host.pcapng").read_bytes()
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(data[:len(data) - 30])
    with pytest.raises(UsageError, match="truncated capture: it ends in the middle of packet"):
        audit_capture(cut, out=tmp_path / "r")
    cp = subprocess.run([sys.executable, "-m", "v6gate.cli", "audit", str(cut), "--out", str(tmp_path / "r2")],
                        capture_output=True, text=True, cwd=ROOT)
    assert cp.returncode == 2
    assert len(cp.stderr.strip().splitlines()) == 1 and "truncated" in cp.stderr, cp.stderr
    assert not (tmp_path / "r2" / "results.json").exists(), "no report from a partial capture"


@pytest.mark.parametrize("content,message", [
    (b"", "empty file"),
    (b"hello, this is text\n" * 3, "not a pcap or pcapng capture"),
    (b"\xd4\xc3\xb2\xa1\x02\x00", "truncated pcap file"),
])
def test_non_pcap_files_are_one_line_usage_errors(tmp_path, content, message):
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(content)
    cp = subprocess.run([sys.executable, "-m", "v6gate.cli", "audit", str(bad)], capture_output=True, text=True,
                        cwd=ROOT)
    assert cp.returncode == 2 and message in cp.stderr and len(cp.stderr.strip().splitlines()) == 1, cp.stderr
    with pytest.raises(UsageError, match=message):
        audit_capture(bad)


def test_a_capture_without_ethernet_is_a_usage_error(tmp_path):
    import struct

    sll = tmp_path / "any.pcap"  # Linux cooked capture (tcpdump -i any): no MAC addresses to name hosts by
    with open(sll, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 113))
        frame = bytes(16) + bytes.fromhex("6000000000083aff") + bytes(32) + bytes.fromhex("8000000000000000")
        f.write(struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame)
    with pytest.raises(UsageError, match="no Ethernet source address"):
        audit_capture(sll, out=tmp_path / "r")


def test_an_unknown_host_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="--host 2001:db8::dead: no host"):
        audit_capture(CAPTURES / "dad-skipped.pcapng", hosts=["2001:db8::dead"], out=tmp_path)


def test_a_host_is_found_by_an_address_it_used(tmp_path):
    _, doc = audit_capture(CAPTURES / "dual-stack-host.pcapng", hosts=["198.18.1.2"], out=tmp_path, jobs=1)
    assert {c["part"] for c in all_checks(doc)} == {"02:00:00:00:00:02"}


# -- the per-host rules on decoded fields ------------------------------------------------------------
HOST = "02:00:00:00:00:aa"


def fields(**kw):
    f = [""] * len(FIELDS)
    f[F["time"]] = str(kw.pop("time", 1000.0))
    f[F["len"]] = "100"
    f[F["esrc"]] = kw.pop("src", HOST)
    for k, v in kw.items():
        f[F[k]] = str(v)
    return f


def feed(*frames):
    a = Audit()
    for i, f in enumerate(frames, 1):
        a.add(i, 0, f)
    return a


def judged(audit, mac=HOST):
    from v6gate.audit.findings import judge_host

    return {j.finding.id: j for j in judge_host(audit, audit.hosts[mac])}


def test_arp_and_dhcpv4_without_108_fail_while_dhcpv4_with_108_is_allowed():
    a = feed(fields(time=1, etype="0x0800", sport=68, dport=67, dhcp_type=1, dhcp_prl="1,3,6,108"),
             fields(time=2, etype="0x86dd", v6_src="fe80::1"))
    j = judged(a)
    assert j["audit.host_sends_no_ipv4"].verdict == "PASS" and j["audit.dhcpv4_asks_for_option_108"].verdict == "PASS"
    a = feed(fields(time=1, etype="0x0806", arp_op=1, arp_spa="169.254.3.4", arp_tpa="169.254.3.4"),
             fields(time=2, etype="0x0800", sport=68, dport=67, dhcp_type=1, dhcp_prl="1,3,6"))
    j = judged(a)
    assert j["audit.host_sends_no_ipv4"].verdict == "FAIL"
    assert "ARP: 1 (first at +0.000 s, frame 1" in j["audit.host_sends_no_ipv4"].seen
    assert j["audit.dhcpv4_asks_for_option_108"].verdict == "FAIL"
    assert j["audit.ipv6_only_readiness"].verdict == "FAIL"


def test_a_request_after_an_offer_with_108_fails_until_v6only_wait_ends():
    offer = fields(time=10, src="02:00:00:00:00:01", etype="0x0800", ip_src="198.18.1.1", sport=67, dport=68,
                   dhcp_type=2, dhcp_opts="53,54,51,1,108", dhcp_chaddr=HOST, dhcp_yiaddr="198.18.1.100")
    later = fields(time=10 + 299, etype="0x0800", sport=68, dport=67, dhcp_type=3, dhcp_prl="1,108")
    assert judged(feed(offer, later))["audit.dhcpv4_stops_after_option_108"].verdict == "FAIL"
    resumed = fields(time=10 + 301, etype="0x0800", sport=68, dport=67, dhcp_type=1, dhcp_prl="1,108")
    assert judged(feed(offer, resumed))["audit.dhcpv4_stops_after_option_108"].verdict == "PASS"
    # an interface restart (DAD of its link-local) is a network attachment event: DHCPv4 may start again
    restart = fields(time=50, etype="0x86dd", v6_src="::", icmp6_type=135, hlim=255, ns_target="fe80::aa")
    again = fields(time=51, etype="0x0800", sport=68, dport=67, dhcp_type=1, dhcp_prl="1,108")
    assert judged(feed(offer, restart, again))["audit.dhcpv4_stops_after_option_108"].verdict == "PASS"


def test_dns_over_ipv4_or_without_aaaa_fails():
    v6 = fields(etype="0x86dd", v6_src="2001:db8::aa", v6_dst="2001:db8::53", sport=5353, dport=53,
                dns_resp=0, dns_qname="x.example", dns_qtype=28)
    assert judged(feed(v6))["audit.dns_over_ipv6"].verdict == "PASS"
    only_a = fields(etype="0x86dd", v6_src="2001:db8::aa", v6_dst="2001:db8::53", sport=5353, dport=53,
                    dns_resp=0, dns_qname="x.example", dns_qtype=1)
    assert judged(feed(only_a))["audit.dns_over_ipv6"].verdict == "FAIL"
    v4 = fields(etype="0x0800", ip_src="198.18.1.2", ip_dst="198.18.1.53", sport=5353, dport=53, dns_resp=0,
                dns_qname="x.example", dns_qtype=28)
    j = judged(feed(v6, v4))["audit.dns_over_ipv6"]
    assert j.verdict == "FAIL" and "over IPv4" in j.seen
    assert judged(feed(fields(etype="0x86dd", v6_src="fe80::aa")))["audit.dns_over_ipv6"].verdict == "SKIP"


def test_nd_with_hop_limit_254_and_addresses_used_before_dad_fail():
    ns = fields(etype="0x86dd", v6_src="fe80::aa", v6_dst="ff02::1:ff00:1", icmp6_type=135, hlim=254,
                ns_target="fe80::1")
    j = judged(feed(ns))["audit.nd_behaviour"]
    assert j.verdict == "FAIL" and "hop limit 254" in j.seen
    start = fields(time=1, etype="0x86dd", v6_src="::", icmp6_type=135, hlim=255, ns_target="fe80::aa")
    ll_use = fields(time=2, etype="0x86dd", v6_src="fe80::aa", icmp6_type=133, hlim=255)
    unprobed = fields(time=3, etype="0x86dd", v6_src="2001:db8::aa", v6_dst="2001:db8::1", icmp6_type=128)
    j = judged(feed(start, ll_use, unprobed))["audit.nd_behaviour"]
    assert j.verdict == "FAIL" and "2001:db8::aa used at frame 3" in j.seen
    probed = fields(time=2.5, etype="0x86dd", v6_src="::", icmp6_type=135, hlim=255, ns_target="2001:db8::aa")
    assert judged(feed(start, ll_use, probed, unprobed))["audit.nd_behaviour"].verdict == "PASS"


def test_bad_checksums_fail_and_ras_report_rdnss_and_pref64():
    bad = fields(etype="0x86dd", v6_src="2001:db8::aa", udp_ck=0, sport=1, dport=2)
    assert judged(feed(bad))["audit.checksums"].verdict == "FAIL"
    ra = fields(src="02:00:00:00:00:01", etype="0x86dd", v6_src="fe80::1", icmp6_type=134, hlim=255,
                rdnss="2001:db8::53", pref64="2001:db8:64::", pref64_plc=0, ra_lifetime=1800, ra_flag_o=0)
    a = feed(ra)
    j = judged(a, "02:00:00:00:00:01")["audit.router_advertises_dns_and_nat64_prefix"]
    assert j.verdict == "PASS" and "PREF64 2001:db8:64::/96" in j.seen and "RDNSS 2001:db8::53" in j.seen
    assert a.pref64_seen == {"2001:db8:64::/96"}
