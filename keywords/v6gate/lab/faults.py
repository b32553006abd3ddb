"""Lab faults: named ways to make the lab's DUT misbehave (negative controls).

The catalogue is data: ``fixtures/faults/*.yaml``, one file per area, each
entry with a reason and one or more mechanisms:

    dut_drops_echo_request:
      reason: the DUT has no Echo responder (RFC 4443 §4.2 violated)
      nft: |                       # nftables ruleset loaded in the DUT namespace
        table inet v6gate_fault { chain input { type filter hook input priority -300; ... } }
      sysctl: {net.ipv6.conf.{dut_if}.dad_transmits: 0}    # after the DUT is up
      boot_sysctl: {net.ipv6.conf.default.accept_dad: 0}   # before its interface exists
      tc: ["qdisc add dev {dut_if} root ..."]              # tc commands in the DUT namespace
      switch_tc: ["..."]                                   # tc on the DUT's switch port ({dut_port}) or the peer's ({peer_port})
      commands: ["ip link set {dut_if} mtu 1400"]          # shell commands in the DUT namespace
      impostor: {rule: answer_invalid_ns}                   # a responder on the DUT's link
      repair: {rule: nd_validity}                           # repairs invalid messages before the DUT's kernel

Every mechanism is undone by rebuilding the DUT (``Lab.reset_dut``), which
is what the harness does before the next check.  Placeholders: {dut_if},
{dut_port}, {dut_mac}, {dut_ll}, {prefix}, {dut_ns} (the DUT's namespace)
and {lab_dir} (the lab's work directory, where its daemons keep their files).
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import yamlfile
from ..errors import LabError, UsageError, V6GateError
from ..paths import FIXTURES
from ..util.proc import need, run

FAULT_DIR = FIXTURES / "faults"
MECHANISMS = ("nft", "sysctl", "boot_sysctl", "tc", "switch_tc", "commands", "impostor", "repair")
# What a control's FAIL must show to be the fault's FAIL (tests/lab/test_controls.py): ``fails_with``, a
# regular expression searched (case-insensitive) in what the check saw and its problems; and/or ``counter``,
# one of COUNTERS that must have moved during the check (the fault visibly acted on the DUT's traffic).
PROOF_KEYS = ("fails_with", "counter")
# ``ready_timeout_s``: how long the harness waits for the DUT to come up under this fault (default: the target's
# timing.ready_timeout_s, as when healthy); set it for a fault that keeps the DUT from finishing its start-up.
# ``stands_in_for``: capabilities the lab DUT does not claim that this fault makes it implement through the
# project's own simulated peer (an impostor client); the controls then prove the parts needing them against a copy
# of the lab target that claims them, this fault the PASS side, the part's fault the FAIL side, both labelled.
OTHER_KEYS = ("ready_timeout_s", "stands_in_for")
COUNTERS = ("impostor_answered", "repair_rewrote", "nft_matched")
# Impostor rules that replace the DUT's own protocol engine by the project's simulated one: a FAIL under
# such a fault proves the check against that simulated peer, not against a real stack's misbehaviour.
SIMULATED_PEERS = {"dhcpv6_client": "the project's simulated DHCPv6 client (impostor) stands in for the DUT's",
                   "dnr_client": "the project's simulated DNR (RFC 9463) client (impostor) stands in for the DUT's",
                   "addr_reg_client": "the project's simulated RFC 9686 client (impostor) stands in for the DUT's",
                   "svcb_client": "the project's simulated HTTPS-record (RFC 9460) client (impostor) stands in for "
                                  "the DUT's",
                   "pd_client": "the project's simulated RFC 9762 prefix-delegation client (impostor) stands in for "
                                "the DUT's"}


@dataclass
class Fault:
    name: str
    reason: str
    source: str
    nft: str | None = None
    sysctl: dict = field(default_factory=dict)
    boot_sysctl: dict = field(default_factory=dict)
    tc: list = field(default_factory=list)
    switch_tc: list = field(default_factory=list)
    commands: list = field(default_factory=list)
    impostor: dict | None = None
    repair: dict | None = None
    fails_with: str | None = None
    counter: str | None = None
    ready_timeout_s: float | None = None
    stands_in_for: tuple = ()
    spec: dict = field(default_factory=dict)  # the definition as written (hashed into controls' proofs)

    @property
    def simulated_peer(self) -> str | None:
        """Why the FAIL side is proven only against a simulated peer, or None."""
        return SIMULATED_PEERS.get((self.impostor or {}).get("rule"))

    def proves(self, seen: str, problems=(), counters: dict | None = None) -> str | None:
        """None when a FAIL whose observation is ``seen`` (and ``problems``)
        is the one this fault causes; else why it is not (for controls)."""
        text = " | ".join([seen or "", *problems])
        if text.lstrip().lower().startswith("setup:"):
            return f"a setup step failed, not the clause under test ({text[:120]})"
        if self.fails_with is None and self.counter is None:
            return "the fault declares neither fails_with nor counter: the FAIL's reason is unchecked"
        if self.fails_with is not None and not re.search(self.fails_with, text, re.IGNORECASE | re.DOTALL):
            return f"the FAIL does not say /{self.fails_with}/ (it says: {text[:160]})"
        if self.counter is not None and not (counters or {}).get(self.counter):
            return f"the fault's counter {self.counter} did not move (counters: {counters or {}})"
        return None

    def describe(self) -> str:
        return f"{self.name}: {self.reason}"


_CATALOGUE: dict[str, Fault] | None = None


def load_faults(directory: Path = FAULT_DIR) -> dict[str, Fault]:
    global _CATALOGUE
    if _CATALOGUE is not None and directory == FAULT_DIR:
        return _CATALOGUE
    out: dict[str, Fault] = {}
    for path in sorted(directory.glob("*.yaml")):
        doc = yamlfile.load_data_file(path) or {}
        for name, spec in (doc.get("faults") or {}).items():
            if name in out:
                raise UsageError(f"{path}: fault {name!r} is already defined in {out[name].source}")
            if not isinstance(spec, dict) or not spec.get("reason"):
                raise UsageError(f"{path}: fault {name!r} needs a 'reason'")
            unknown = set(spec) - {"reason", *MECHANISMS, *PROOF_KEYS, *OTHER_KEYS}
            if unknown:
                raise UsageError(f"{path}: fault {name!r} has unknown keys {sorted(unknown)}; use {MECHANISMS} "
                                 f"or {PROOF_KEYS}")
            if spec.get("counter") is not None and spec["counter"] not in COUNTERS:
                raise UsageError(f"{path}: fault {name!r}: counter {spec['counter']!r} is not one of {COUNTERS}")
            if spec.get("fails_with") is not None:
                try:
                    re.compile(spec["fails_with"])
                except re.error as exc:
                    raise UsageError(f"{path}: fault {name!r}: fails_with is not a regular expression: {exc}") from None
            stands = spec.get("stands_in_for") or []
            if not isinstance(stands, list) or not all(isinstance(c, str) and c for c in stands):
                raise UsageError(f"{path}: fault {name!r}: stands_in_for must be a list of capability names")
            if stands and SIMULATED_PEERS.get((spec.get("impostor") or {}).get("rule")) is None:
                raise UsageError(f"{path}: fault {name!r}: stands_in_for needs an impostor rule that is a simulated "
                                 f"peer ({sorted(SIMULATED_PEERS)})")
            if not any(k in spec for k in MECHANISMS):
                raise UsageError(f"{path}: fault {name!r} has no mechanism; use one of {MECHANISMS}")
            out[name] = Fault(name=name, reason=spec["reason"], source=str(path), nft=spec.get("nft"),
                              sysctl=dict(spec.get("sysctl") or {}), boot_sysctl=dict(spec.get("boot_sysctl") or {}),
                              tc=list(spec.get("tc") or []), switch_tc=list(spec.get("switch_tc") or []),
                              commands=list(spec.get("commands") or []), impostor=spec.get("impostor"),
                              repair=spec.get("repair"), fails_with=spec.get("fails_with"),
                              counter=spec.get("counter"), spec=dict(spec),
                              ready_timeout_s=float(spec["ready_timeout_s"]) if spec.get("ready_timeout_s") else None,
                              stands_in_for=tuple(stands))
    if directory == FAULT_DIR:
        _CATALOGUE = out
    return out


def stand_in_for(capabilities) -> Fault | None:
    """The fault whose simulated peer implements every one of ``capabilities``
    (``stands_in_for``), for the controls of parts the lab DUT cannot claim; None if there is none."""
    want = set(capabilities)
    if not want:
        return None
    return next((f for f in load_faults().values() if want <= set(f.stands_in_for)), None)


def get_fault(name: str) -> Fault:
    cat = load_faults()
    if name not in cat:
        raise UsageError(f"unknown lab fault {name!r}; define it in fixtures/faults/*.yaml")
    return cat[name]


class AppliedFault:
    """A fault in force on a lab; ``remove()`` stops its impostor and its
    repairer and deletes the qdiscs it put on switch ports other than the
    DUT's (the DUT rebuild that follows removes everything else, its own
    switch port included)."""

    def __init__(self, fault: Fault, impostor=None, repairer=None, switch_qdiscs: tuple[str, list[str]] | None = None):
        self.fault = fault
        self.impostor = impostor
        self.repairer = repairer
        self.switch_qdiscs = switch_qdiscs  # (switch namespace, ports whose root qdisc the fault added)

    def counters(self, ns: str | None = None) -> dict:
        """What the fault did so far: frames its impostor sent, packets its
        repairer rewrote, packets its nft rules with a ``counter`` matched."""
        out = {}
        if self.impostor is not None:
            out["impostor_answered"] = self.impostor.answers
        if self.repairer is not None:
            out["repair_rewrote"] = self.repairer.repaired
            out["repair_errors"] = self.repairer.errors
        if self.fault.nft and "counter" in self.fault.nft and ns:
            out["nft_matched"] = nft_counter_packets(ns)
        return out

    def remove(self) -> None:
        if self.impostor is not None:
            self.impostor.stop()
            self.impostor = None
        if self.repairer is not None:
            self.repairer.stop()
            self.repairer = None
        if self.switch_qdiscs:
            _del_root_qdiscs(*self.switch_qdiscs)
            self.switch_qdiscs = None


def _other_switch_ports(fault: Fault, values: dict) -> list[str]:
    """Switch ports, other than the DUT's (rebuilt with the DUT), on which the fault adds a root qdisc."""
    out = []
    for cmd in fault.switch_tc:
        w = _fmt(cmd, values).split()
        if w[:2] == ["qdisc", "add"] and "root" in w and "dev" in w:
            dev = w[w.index("dev") + 1]
            if dev != values["dut_port"] and dev not in out:
                out.append(dev)
    return out


def _del_root_qdiscs(ns: str, ports: list[str]) -> None:
    for dev in ports:
        with contextlib.suppress(V6GateError):
            run(["tc", "qdisc", "del", "dev", dev, "root"], ns=ns, check=False, what=f"remove the fault's qdisc on {dev}")


def nft_counter_packets(ns: str) -> int | None:
    """Packets counted by the ``counter`` statements of the fault's tables
    (named v6gate_fault, any family) in namespace ``ns``."""
    try:
        out = run(["nft", "-j", "list", "ruleset"], ns=ns, what="read the fault's nft counters")
        return nft_counter_total(out.stdout)
    except (V6GateError, ValueError, OSError):
        return None


def nft_counter_total(json_text: str) -> int:
    """The packets of the ``counter`` statements in tables v6gate_fault of ``nft -j list ruleset``."""
    doc = json.loads(json_text)
    total = 0
    for item in doc.get("nftables", []):
        rule = item.get("rule")
        if not rule or rule.get("table") != "v6gate_fault":
            continue
        for stmt in rule.get("expr", []):
            if "counter" in stmt:
                total += int(stmt["counter"].get("packets", 0))
    return total


def _fmt(text: str, values: dict) -> str:
    out = text
    for k, v in values.items():
        out = out.replace("{" + k + "}", str(v))
    return out


def apply_fault(lab, fault: Fault, dut_addresses: dict) -> AppliedFault:
    """Apply ``fault`` to a freshly reset lab DUT.  ``boot_sysctl`` must have
    been passed to the reset already (see Lab.reset_dut)."""
    link = next(iter(lab.dut_node.ifaces))
    values = {
        "dut_if": lab.dut_ifname(),
        "dut_port": lab._port_name(lab.dut_node.name, link),
        # the switch port of the peer node (the gates' and storage checks' client), on the DUT's link
        "peer_port": lab._port_name("peer", link) if "peer" in lab.topology.nodes else "",
        "dut_mac": dut_addresses.get("mac", ""),
        "dut_ll": dut_addresses.get("link_local", ""),
        "prefix": dut_addresses.get("prefix", ""),
        "dut_ns": lab.dut_ns,
        "lab_dir": str(lab.workdir),
    }
    ns = lab.dut_ns
    try:
        if fault.sysctl:
            run(["sysctl", "-q", "-w", *[f"{_fmt(k, values)}={v}" for k, v in fault.sysctl.items()]], ns=ns,
                what=f"fault {fault.name} (sysctl)")
        if fault.nft:
            need("nft")
            run(["nft", "-f", "-"], ns=ns, input=_fmt(fault.nft, values), what=f"fault {fault.name} (nft)")
        for cmd in fault.tc:
            run(["tc", *_fmt(cmd, values).split()], ns=ns, what=f"fault {fault.name} (tc)")
        others = _other_switch_ports(fault, values)
        for cmd in fault.switch_tc:
            run(["tc", *_fmt(cmd, values).split()], ns=lab.switch_ns, what=f"fault {fault.name} (switch tc)")
        for cmd in fault.commands:
            run(["sh", "-c", _fmt(cmd, values)], ns=ns, what=f"fault {fault.name} (command)")
        impostor = None
        if fault.impostor:
            from .impostor import Impostor

            impostor = Impostor(ns, lab.dut_ifname(), fault.impostor, dut_addresses).start()
        repairer = None
        if fault.repair:
            from .repair import Repairer

            repairer = Repairer(ns, lab.dut_ifname(), fault.repair, dut_addresses).start()
        return AppliedFault(fault, impostor, repairer, (lab.switch_ns, others) if others else None)
    except LabError:
        raise
    except Exception as exc:
        with contextlib.suppress(Exception):
            _del_root_qdiscs(lab.switch_ns, _other_switch_ports(fault, values))
        with contextlib.suppress(Exception):
            lab.reset_dut()
        raise LabError(f"could not apply fault {fault.name}: {exc}") from None
