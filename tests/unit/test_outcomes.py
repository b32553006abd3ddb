"""The outcome model: NOT_JUDGED, problems, dut_sent and precondition, from
the check's Outcome to the summary, exit code, results.json, JUnit and the
pytest plugin; reasons lead with the problem; what the DUT sent is decoded
(including an error that quotes the invoking packet from the wrong header)."""

import json
import xml.etree.ElementTree as ET

import jsonschema
from scapy.layers.inet6 import (
    ICMPv6EchoRequest,
    ICMPv6ND_NS,
    ICMPv6ParamProblem,
    IPv6,
    IPv6ExtHdrDestOpt,
    PadN,
)
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from v6gate.core.verdict import NotJudged, Outcome, Result, Verdict, reason_for
from v6gate.net import decode, icmperr
from v6gate.report.junit import write_junit
from v6gate.report.results import EXIT_BENCH, EXIT_FAIL, EXIT_OK, SCHEMA, build_document, summarize

DUT, TN1 = "fe80::200:ff:fe00:1", "fe80::1:2"
PRE = {"name": "nce:TN1", "judged_by": "nd.packets_wait_for_address_resolution#", "detail": "no NA"}


def res(part="A", verdict="PASS", **kw):
    return Result(id="icmpv6.echo_request_is_answered", part=part, title="t", area="icmpv6", ipv6ready="v6LC.5.1.2",
                  rfc="RFC 4443 §4.2", verdict=verdict, reason="r", expected="x", seen="y",
                  evidence={"pcap": "/tmp/p.pcapng"}, duration_s=0.1, started="2026-01-01T00:00:00Z", **kw)


def test_not_judged_alone_is_exit_3_and_listed_under_its_judge():
    s = summarize([res(), res(part="B", verdict="NOT_JUDGED", precondition=PRE)])
    assert s["exit_code"] == EXIT_BENCH
    assert s["counts"]["NOT_JUDGED"] == 1
    assert s["not_judged"] == ["icmpv6.echo_request_is_answered#B"]
    assert s["not_judged_by"] == {"nd.packets_wait_for_address_resolution#": ["icmpv6.echo_request_is_answered#B"]}


def test_a_new_fail_outranks_not_judged():
    s = summarize([res(verdict="FAIL"), res(part="B", verdict="NOT_JUDGED", precondition=PRE)])
    assert s["exit_code"] == EXIT_FAIL


def test_pass_and_skip_only_is_still_exit_0():
    assert summarize([res(), res(part="B", verdict="SKIP")])["exit_code"] == EXIT_OK


def test_reason_leads_with_the_problems_and_lists_what_the_dut_sent():
    o = Outcome(Verdict.FAIL, "Echo Reply from X", problems=["hop limit 254, not 255", "data differs"],
                dut_sent=["NS for TN1 at +0.010 s"])
    r = reason_for(o, "an Echo Reply", " (pcap: p)")
    assert r.startswith("hop limit 254, not 255; data differs — expected an Echo Reply; seen Echo Reply from X")
    assert "the DUT sent: NS for TN1 at +0.010 s" in r and r.endswith("(pcap: p)")
    assert reason_for(Outcome(Verdict.PASS, "ok"), "x") == "expected x; seen ok"


def test_not_judged_reason_names_the_precondition_and_its_judge():
    exc = NotJudged("nce:TN1", "nd.packets_wait_for_address_resolution", "the DUT sent no NA for TN1's NS",
                    dut_sent=["NS for TN1 at +0.001 s"])
    o = exc.outcome()
    assert o.verdict == Verdict.NOT_JUDGED and o.precondition["judged_by"].endswith("#")
    r = reason_for(o, "x")
    assert r.startswith("not judged: precondition nce:TN1 not reached")
    assert "judged by nd.packets_wait_for_address_resolution)" in r and "NS for TN1" in r


def test_document_with_the_new_fields_validates_and_junit_shows_not_judged(tmp_path):
    results = [res(verdict="FAIL", problems=["hop limit 254, not 255"], dut_sent=["NS for TN1 at +0.01 s"]),
               res(part="B", verdict="NOT_JUDGED", precondition=PRE)]
    doc = build_document(results, run_meta={"id": "x", "started": "s", "finished": "f", "target": {
        "name": "t", "kind": "host"}, "profile": "default", "tool": {}, "host": {}})
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(doc)
    assert doc["checks"][1]["precondition"]["name"] == "nce:TN1"
    out = tmp_path / "j.xml"
    write_junit(doc, out)
    cases = ET.parse(out).getroot().findall(".//testcase")
    assert cases[0].find("failure") is not None
    skipped = cases[1].find("skipped")
    assert skipped is not None and skipped.get("type") == "NOT_JUDGED" and cases[1].find("failure") is None


def test_old_records_without_the_new_fields_still_load():
    d = res().as_dict()
    for k in ("problems", "dut_sent", "precondition"):
        d.pop(k)
    r = Result.from_dict(d)
    assert r.problems == [] and r.precondition is None


def _invoking_with_unknown_option():
    return bytes(IPv6(src=TN1, dst=DUT) / IPv6ExtHdrDestOpt(options=[PadN(otype=0x9D, optdata=b"\0" * 4)])
                 / ICMPv6EchoRequest(id=7, data=b"x" * 16))


def test_a_parameter_problem_quoting_from_the_destination_options_header_says_so():
    inv = _invoking_with_unknown_option()
    err = Ether() / IPv6(src=DUT, dst=TN1) / ICMPv6ParamProblem(code=2, ptr=42) / Raw(inv[40:])
    e = icmperr.parse(err)
    assert not icmperr.error_about(TN1, type_=4)(err)  # the old matcher missed it: "no Parameter Problem"
    assert icmperr.misquoting(4, [inv])(err)
    problems = icmperr.problems(e, type_=4, code=2, invoking=inv, field=42)
    assert problems == ["the quote starts at the invoking packet's Destination Options header (octet 40), "
                        "not at its IPv6 header"]
    names = decode.Names({}, {"DUT": DUT})
    line = decode.describe(err, names, [inv])
    assert line.startswith("Parameter Problem code 2 pointer 42 from DUT")
    assert "quoting from the invoking packet's Destination Options header (octet 40)" in line


def test_a_correct_quote_is_not_misquoting():
    inv = _invoking_with_unknown_option()
    err = Ether() / IPv6(src=DUT, dst=TN1) / ICMPv6ParamProblem(code=2, ptr=42) / Raw(inv)
    assert icmperr.error_about(TN1, type_=4)(err) and not icmperr.misquoting(4, [inv])(err)


def test_frames_are_named_after_the_emulated_nodes():
    class Node:
        link_local, global_addr = TN1, None

    ns = Ether() / IPv6(src=DUT, dst="ff02::1:ff01:2") / ICMPv6ND_NS(tgt=TN1)
    assert decode.describe(ns, decode.Names({"TN1": Node()})).startswith("NS for TN1 to ff02::1:ff01:2")


def test_bench_counters_that_moved_make_the_check_an_error():
    from v6gate.core.session import Session

    before = {"port": (2, None), "capture": (0, None), "repairer": (0, None)}
    after = {"port": (3, "a responder on t0 raised KeyError: 'x'"), "capture": (0, None), "repairer": (0, "r")}
    assert Session._bench_broke(before, after) == "port: 1 error(s) (a responder on t0 raised KeyError: 'x')"
    assert Session._bench_broke(before, before) is None
    assert "capture: 1 error(s)" in Session._bench_broke(before, {**before, "capture": (1, "capture reader: EOF")})


def test_ssh_exit_255_is_a_bench_error_not_the_duts_answer():
    import subprocess

    import pytest

    from v6gate.core.control import NoControl, SshControl
    from v6gate.errors import BenchError

    ssh = SshControl({"host": "dut.example"})
    refused = subprocess.Popen(["sh", "-c", "echo 'connect to host dut.example port 22: Connection refused' >&2; "
                                "exit 255"], stderr=subprocess.PIPE, text=True)
    refused.wait()
    with pytest.raises(BenchError, match="Connection refused"):
        ssh.check_exit(refused)
    answered = subprocess.Popen(["sh", "-c", "exit 1"])
    answered.wait()
    ssh.check_exit(answered)  # the DUT's own "no" stays the DUT's answer
    NoControl().check_exit(refused)


def test_eui64_targets_predict_the_global_address():
    import ipaddress
    from types import SimpleNamespace

    from v6gate.core.dut import DutView

    target = SimpleNamespace(dut_mac="00:00:5e:00:53:01", link_prefix=ipaddress.IPv6Network("2001:db8:1::/64"),
                             dut_iid="eui64", dut_global=[])
    dut = DutView(target, NoControlStub(), "fe80::200:5eff:fe00:5301")
    assert dut.predicted_address(ipaddress.IPv6Network("fec0:0:1::/64")) == "fec0:0:1:0:200:5eff:fe00:5301"
    target.dut_iid = "stable-privacy"
    assert dut.predicted_address(ipaddress.IPv6Network("fec0:0:1::/64")) is None


class NoControlStub:
    def addresses(self):
        return []


def test_a_check_withdraws_what_it_advertised_but_not_the_links_prefix():
    import ipaddress
    from types import SimpleNamespace

    from scapy.layers.inet6 import ICMPv6ND_RA, ICMPv6NDOptPrefixInfo

    from v6gate.core.context import CheckContext
    from v6gate.net.nd import prefix_option, router_advertisement
    from v6gate.net.nodes import EmulatedNode

    sent = []
    port = SimpleNamespace(now=lambda: 0.0, send=lambda p: sent.append(p) or 0.0, remove_responder=lambda r: None)
    ctx = CheckContext.__new__(CheckContext)
    ctx.port, ctx.nodes, ctx._deferred, ctx.setup, ctx.timeline, ctx.t0 = port, {}, [], (), [], 0.0
    ctx._advertised, ctx.session, ctx._link_parameters = {}, None, [set(), None]  # no session: no address ledger
    ctx.target = SimpleNamespace(link_prefix=ipaddress.IPv6Network("2001:db8:1::/64"))
    left = []
    ctx.dut = SimpleNamespace(link_prefix_left_on_link=lambda: left.append(True))
    tr1 = EmulatedNode.fresh("TR1", ctx.target.link_prefix, router=True)
    ctx.send(router_advertisement(tr1, router_lifetime=600, prefixes=[
        prefix_option(ipaddress.IPv6Network("2001:db8:77::/64"), valid=600, preferred=600),
        prefix_option(ctx.target.link_prefix, valid=600, preferred=600)]))
    ctx.cleanup()
    withdrawal = sent[-1]
    assert withdrawal[ICMPv6ND_RA].routerlifetime == 0
    opts = [withdrawal.getlayer(ICMPv6NDOptPrefixInfo, i) for i in (1, 2)]
    assert opts[0].prefix == "2001:db8:77::" and opts[0].validlifetime == 0 and opts[0].preferredlifetime == 0
    assert opts[1] is None  # the link's own prefix stays the link router's
    assert left == [True]  # ... and the DUT view knows it is left on-link (withdrawn before the next router check)
    sent.clear()
    ctx.cleanup()
    assert not sent  # withdrawn once


def test_a_plain_fail_leads_with_what_was_seen_once():
    o = Outcome(Verdict.FAIL, "no Echo Reply within 2 s", problems=["no Echo Reply within 2 s"],
                dut_sent=["NS for TN1 to ff02::1:ff00:1 at +0.010 s"])
    assert reason_for(o, "an Echo Reply") == ("no Echo Reply within 2 s — expected an Echo Reply; the DUT sent: "
                                              "NS for TN1 to ff02::1:ff00:1 at +0.010 s")


def test_pytest_shows_not_judged_as_its_own_category_and_never_a_pass():
    from types import SimpleNamespace

    import pytest

    from v6gate import pytest_plugin as plug

    result = SimpleNamespace(verdict="NOT_JUDGED", reason="not judged: precondition nce:TN1 ...", waived=False,
                             ipv6ready=None, part=None, rfc="RFC 4443 §4.2")
    with pytest.raises(plug.V6GateNotJudged):
        plug._raise_for(result)
    def report(crash: str):  # what pytest keeps of a failed call: the crash line of the exception
        longrepr = SimpleNamespace(reprcrash=SimpleNamespace(message=crash))
        return SimpleNamespace(when="call", failed=True, longrepr=longrepr)

    assert plug.pytest_report_teststatus(report("v6gate.pytest_plugin.V6GateNotJudged: not judged"), None)[:2] \
        == ("not judged", "N")
    assert plug.pytest_report_teststatus(report("AssertionError"), None) is None
    # an INCONCLUSIVE gate is not "not judged", although its traceback quotes _raise_for's source
    assert plug.pytest_report_teststatus(report("v6gate.pytest_plugin.V6GateInconclusive: expected ... "
                                                "raise V6GateNotJudged(result.reason)"), None) is None


def _ctx(check_id="nd.some_check"):
    from types import SimpleNamespace

    from v6gate.core.context import CheckContext

    ctx = CheckContext.__new__(CheckContext)
    ctx.check = SimpleNamespace(id=check_id)
    ctx.measurements, ctx.timeline, ctx.t0 = {}, [], 0.0
    ctx.dut_sent = ["NS for TN1 at +0.010 s"]
    ctx.port = SimpleNamespace(now=lambda: 1.0)
    return ctx


def test_a_deviation_is_the_checks_fail_the_step_named():
    from v6gate.core.session import _deviated
    from v6gate.core.verdict import Deviation

    o = _deviated(_ctx(), Deviation("no Echo Reply within 1 s"))
    assert o.verdict == Verdict.FAIL and o.seen == "no Echo Reply within 1 s"
    assert o.problems == ["no Echo Reply within 1 s"] and o.dut_sent == ["NS for TN1 at +0.010 s"]
    assert reason_for(o, "an Echo Reply").startswith("no Echo Reply within 1 s — expected an Echo Reply")
    # judged by this very check: still its FAIL
    own = _deviated(_ctx(), Deviation("setup: no NS", name="nce:TN1", judged_by="nd.some_check#A"))
    assert own.verdict == Verdict.FAIL and own.seen == "setup: no NS"


def test_a_deviation_judged_by_another_check_is_not_judged():
    from v6gate.core.session import _deviated
    from v6gate.core.verdict import Deviation

    ctx = _ctx()
    o = _deviated(ctx, Deviation("setup: no NS for TN1", name="nce:TN1", judged_by="nd.other_check#A"))
    assert o.verdict == Verdict.NOT_JUDGED
    assert o.precondition == {"name": "nce:TN1", "judged_by": "nd.other_check#A", "detail": "setup: no NS for TN1"}
    assert ctx.timeline and "precondition nce:TN1 not reached" in ctx.timeline[-1][1]
    assert _deviated(None, Deviation("x")).verdict == Verdict.ERROR
