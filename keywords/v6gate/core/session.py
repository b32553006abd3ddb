"""A session: one target (or lab), its tester port, capture and control,
running checks one at a time and recording a Result for each.

Every front-end (pytest plugin, Robot library, CLI, the project's controls
test) drives checks through ``Session.run`` and nothing else.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import ipaddress
import json
import os
import signal
import threading
import time
import traceback
from pathlib import Path

from ..errors import BenchError, UsageError, V6GateError
from ..lab.faults import AppliedFault, apply_fault, get_fault
from ..net import packets as P
from ..net.capture import Capture, pcap_path_for
from ..net.port import Port
from ..paths import shown
from . import carryover, fill
from .check import NEEDS, Check, Part
from .context import CheckContext, NotApplicable
from .control import NotSupported, VmConsoleControl, control_for
from .dut import DutView
from .ledger import AddressLedger
from .liveness import Liveness, presence
from .neighbour_room import NeighbourRoom
from .observer import DutObserver
from .pace import Pace
from .room import ADDRESS_ROOM, AddressTable
from .setup import JUDGED_BY
from .target import Target, load_target
from .together import Plan, run_batch
from .verdict import NOT_RUN, Deviation, NotJudged, Outcome, Result, Verdict, reason_for, result_key

LAB_TARGET = "fixtures/targets/lab.yaml"


def _now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def install_signal_handlers() -> None:
    """SIGTERM/SIGHUP become KeyboardInterrupt so every ``finally`` (lab
    teardown included) runs."""
    if threading.current_thread() is not threading.main_thread():
        return

    def _raise(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, _raise)


class RunRecorder:
    """Appends results of one process (one xdist worker) to records/<worker>.jsonl."""

    def __init__(self, run_dir: Path, worker: str | None = None, phase: str = "checks"):
        self.run_dir = Path(run_dir)
        self.worker = worker or os.environ.get("PYTEST_XDIST_WORKER") or "main"
        (self.run_dir / "records").mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / "records" / f"{phase}-{self.worker}-{os.getpid()}.jsonl"
        self._lock = threading.Lock()

    #: why records can no longer be written (the run directory is full or read-only), or None
    error: str | None = None

    def write(self, result: Result) -> None:
        """Append one result as one line, whole or not at all: a line that does not fit is taken back (the
        file keeps the lines before it) and ``error`` says why (the run stops: Session.bench_lost)."""
        data = (json.dumps(result.as_dict(), default=str) + "\n").encode()
        with self._lock:
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                self.error = f"the run directory {self.run_dir} cannot be written ({exc.strerror or exc})"
                return
            size = os.fstat(fd).st_size
            try:
                if os.write(fd, data) != len(data):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                self.error = f"the run directory {self.run_dir} cannot be written ({exc.strerror or exc})"
            finally:
                os.close(fd)


class Session:
    def __init__(self, target: Target, run_dir: Path, *, lab=None, recorder: RunRecorder | None = None,
                 profile: str = "default"):
        self.target = target
        self.run_dir = Path(run_dir)
        self.lab = lab
        self.recorder = recorder
        self.profile = profile
        self.control = control_for(target, lab)
        self.port: Port | None = None
        self.capture: Capture | None = None
        self.dut: DutView | None = None
        self.open_error: str | None = None
        self.worker = os.environ.get("PYTEST_XDIST_WORKER") or "main"
        self._fault = None  # the lab fault in force for the running check
        #: the lab fault a lab DUT carries for the whole run (target ``lab.fault``: a lab DUT with a defect, as in
        #: the campaign demo's fleet), applied like a check's fault after every rebuild; verdicts stay the DUT's own
        self.dut_fault = (target.lab or {}).get("fault") if lab is not None and not lab.external_dut else None
        self._applied: AppliedFault | None = None
        self.last_lab_timings: dict | None = None
        self.dut_state_after: dict | None = None  # what the run left on a DUT it does not reset (close())
        self.ledger = AddressLedger()  # the addresses the run's RAs made the DUT form, and when they expire
        self.table = AddressTable(self)  # the DUT's address table: declared or discovered (core/room.py)
        #: states earlier checks left the DUT in, running on a timer, by the areas whose checks they matter to (an
        #: empty set: every check): (until, why); a check on a DUT that is not reset first waits out the ones that
        #: matter to it (see CheckContext.dut_keeps_state)
        self.settle: dict[frozenset[str], tuple[float, str]] = {}
        #: on a DUT the run does not rebuild before each check: is it on the link, and still answering after each
        #: part (core/liveness.py); ``absent``: the one line saying it is not on the link at all
        self.liveness = Liveness(self) if lab is None or lab.external_dut else None
        #: the reply and silence windows this DUT's measured answers need (core/pace.py); the lab's DUT keeps its own
        self.pace = Pace(target.timing) if self.liveness is not None else None
        self.absent: str | None = None
        #: the DUT's DAD probes since its last reset, seen passively (core/observer.py): does it perform DAD at all
        self.observer: DutObserver | None = None
        #: the bench could not go on (the tester interface deleted or set down, the run directory full or
        #: read-only): the part it happened in is ERROR, every later part ERROR at once, not run
        self.bench_lost: str | None = None
        #: the run's parts in order, where parts of a check may run side by side (core/together.py; the pytest
        #: front-end gives it for a DUT the run does not rebuild)
        self.plan: Plan | None = None
        #: the addresses an earlier run left on the DUT that it still held when this run began (core/carryover.py)
        self.carried: dict | None = None
        #: how many parts of a check run side by side: the DUT's Neighbor Cache room, found out when a check has more
        #: parts than a small cache is sure to hold (core/neighbour_room.py)
        self.neighbour_room = NeighbourRoom(self) if self.liveness is not None else None

    # -- construction helpers ---------------------------------------------------------
    @classmethod
    def for_target(cls, target: str, run_dir: Path, *, profile="default",
                   recorder: RunRecorder | None = None) -> Session:
        """``lab`` or a target file with a ``lab:`` section: build that lab; else open the target's DUT."""
        if target == "lab":
            return cls.for_lab(run_dir, profile=profile, recorder=recorder)
        t = load_target(target)
        if t.is_lab:
            return cls.for_lab(run_dir, target_file=target, profile=profile, recorder=recorder)
        return cls(t, run_dir, recorder=recorder, profile=profile).open()

    @classmethod
    def for_lab(cls, run_dir: Path, *, target_file: str | Path | None = None, topology=None, profile="default",
                recorder: RunRecorder | None = None, external_dut: str | None = None) -> Session:
        from ..lab import Lab
        from ..paths import ROOT

        target_file = Path(target_file or ROOT / LAB_TARGET)
        base = load_target(target_file)
        if not base.is_lab:
            raise UsageError(f"{target_file}: not a lab target (it has no 'lab:' section)")
        topo = topology or (target_file.parent / base.lab["topology"]).resolve()
        lab = Lab(topo, external_dut=external_dut or base.lab.get("external_dut"),
                  tap_name=base.lab.get("tap_name", "tap0"))
        lab.up()
        try:
            target = load_target(target_file, overrides=lab.target_overrides())
            return cls(target, run_dir, lab=lab, recorder=recorder, profile=profile).open()
        except BaseException:
            lab.down()
            raise

    def open(self) -> Session:
        t = self.target
        self.port = Port(t.tester_interface, t.tester_netns).open()
        self.observer = DutObserver(t.dut_mac)
        self.port.add_responder(self.observer)
        try:
            self.capture = Capture(t.tester_interface, t.tester_netns).start()
        except BaseException:
            self.port.close()
            raise
        try:
            ll = self._resolve_link_local()
        except BenchError as exc:
            self.open_error = str(exc)
            ll = "fe80::"
        self.dut = DutView(t, self.control, ll, self.port)
        if self.liveness is not None:
            self.absent = presence(self.port, t, None if self.open_error else ll)
            if not self.absent and not self.open_error and self.pace is not None:
                self.pace.calibrate(self.port, t.dut_mac, ll)
            if not self.absent and not self.open_error:
                self.carried = carryover.carry_over(self)  # what an earlier run left on it (core/carryover.py)
        return self

    def dut_state(self) -> dict:
        """What the run leaves configured on the DUT: its global addresses
        (read through the control adapter; None when it cannot read them),
        and what the run's own prefixes leave by RFC 4862's arithmetic
        (``predicted``: the prefixes whose address has not yet expired)."""
        predicted = self.ledger.summary(time.monotonic())
        adv = self.dut.link_prefix_advertised if self.dut else None
        if adv is not None:  # the tester gave the DUT the link prefix (the only router on the link)
            from .dut import LINK_PREFIX_LIFETIME_S

            left = round(adv + LINK_PREFIX_LIFETIME_S - time.monotonic(), 1)
            if left > 0:
                predicted = {**predicted, "prefixes": [*predicted["prefixes"], str(self.target.link_prefix)],
                             "count": predicted["count"] + 1,
                             "all_gone_in_s": None if predicted["all_gone_in_s"] is None
                             else max(predicted["all_gone_in_s"], left)}
        try:
            addrs = [a for a in self.control.addresses() if not a.lower().startswith("fe80")]
        except (NotSupported, BenchError) as exc:
            return {"addresses": None, "count": None, "how": f"not readable: {exc}", "predicted": predicted}
        outside = [a for a in addrs if ipaddress.IPv6Address(a) not in self.target.link_prefix]
        return {"addresses": addrs, "count": len(addrs), "outside_link_prefix": len(outside),
                "how": f"read through control adapter {self.control.name}", "predicted": predicted}

    def address_slots(self) -> int | None:
        """Addresses of the DUT's table free for the run's prefixes (None: no
        bound known, declared or discovered; core/room.py)."""
        return self.table.slots()

    def close(self) -> None:
        if self.port and (self.lab is None or self.lab.external_dut):
            with contextlib.suppress(Exception):
                self.dut_state_after = self.dut_state()
            if self.liveness is not None and not self.absent and not self.open_error:
                carryover.save(self)  # for the next run against this DUT
        if self.capture:
            with contextlib.suppress(Exception):
                self.capture.stop()
            self.capture = None
        if self.port:
            self.port.close()
            self.port = None
        self.control.close()
        if self.lab:
            self.lab.down()
            self.last_lab_timings = {k: round(v, 3) for k, v in self.lab.timings.items()}
            self.lab = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _resolve_link_local(self) -> str:
        ll = self.target.dut_link_local
        if ll == "eui64":
            return P.link_local_from_mac(self.target.dut_mac)
        if ll != "discover":
            return ll
        # Discovery: an Echo Request to all-nodes; the DUT answers from its link-local.
        from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6

        from ..net.nodes import EmulatedNode

        n = EmulatedNode.fresh("DISCOVER", self.target.link_prefix)
        self.port.add_responder(n.responder)
        try:
            probe = n.ipv6(P.ALL_NODES, "") / ICMPv6EchoRequest(id=0xD15C, seq=1)
            since = self.port.send(probe)
            mac = self.target.dut_mac
            f = self.port.expect(lambda p: ICMPv6EchoReply in p and p.src.lower() == mac
                                 and p[ICMPv6EchoReply].id == 0xD15C, self.target.timing["reply_timeout_s"],
                                 since=since)
        finally:
            self.port.remove_responder(n.responder)
        if not f:
            raise BenchError(f"could not discover the DUT's link-local address: no Echo Reply from {mac} to an "
                             "all-nodes Echo Request; set dut.link_local in the target file")
        return f.pkt[IPv6].src

    # -- running checks ---------------------------------------------------------------
    def applicability(self, c: Check, part: Part) -> str | None:
        """Why this check does not apply to the target (None: it applies)."""
        t = self.target
        scope = c.scope_of(part)
        if scope == "router" and t.kind != "router":
            return "router-only part: the target is a " + t.kind
        if scope == "host" and t.kind == "router":
            return "host-only part: the target is a router"
        missing = [cap for cap in c.capabilities_of(part) if not t.claims(cap)]
        if missing:
            return f"the target does not claim {', '.join(missing)} (capabilities in the target file)"
        if "exclusive_router" in c.needs and t.other_routers and not self.lab:
            return f"{NEEDS['exclusive_router']}, but the target file says link.other_routers: true"
        if "lab_router" in c.needs and not self.lab:
            return "needs the lab's router and services; run it against the lab"
        if c.lab_services and not self.lab:
            return f"needs the lab's {', '.join(sorted(c.lab_services))}; run it against the embedded lab"
        if self.lab and not self.lab.external_dut:
            topo = self.lab.topology
            known = {s.get("id", s["name"]) for n in topo.nodes.values() for s in n.services} | {
                s["name"] for n in topo.nodes.values() for s in n.services}
            missing = sorted(set(c.lab_services) - known)
            if missing:
                return (f"the lab topology ({topo.path}) has no service {', '.join(missing)} yet; this check "
                        "needs it")
            if c.dut_config and c.dut_config not in self.lab.dut_node.configs:
                return (f"the lab topology ({topo.path}) has no DUT configuration {c.dut_config!r} yet; this "
                        "check needs it")
        return None

    def _prepare_lab(self, c: Check, fault_name: str | None) -> AppliedFault | None:
        lab = self.lab
        exclusive = "exclusive_router" in c.needs
        lab.set_router_advertising(not exclusive)
        lab.ensure_services(set(c.lab_services))
        fault = get_fault(fault_name) if fault_name else None
        if lab.external_dut:
            # the lab cannot rebuild a DUT it does not manage: a check that needs a fresh DUT resets it through the
            # target's control adapter, or SKIPs with the adapter's reason (NotSupported)
            if "reset" in c.needs:
                self.control.reset()
                self._was_reset()
            return None
        if "no_reset" in c.needs and not fault and not lab.dut_faulted and lab.dut_config == c.dut_config:
            return None
        lab.reset_dut(boot_sysctl=fault.boot_sysctl if fault else None, wait=False, config=c.dut_config)
        self._observe_from(lab.dut_reborn_at)
        self.settle = {}  # a fresh DUT (the lab keeps what it learned of its addresses: the same again)
        try:
            # the same ready timeout under a fault as when healthy, unless the fault declares its own (a fault
            # that keeps the DUT from finishing its start-up, where waiting is pointless)
            ready = self.target.timing["ready_timeout_s"]
            if fault and fault.ready_timeout_s is not None:
                ready = fault.ready_timeout_s
            lab.wait_dut_ready(timeout=ready)
        except BenchError:
            if not fault:
                raise
            # a fault may keep the DUT from finishing its start-up: that is its point
        if not fault:
            return None
        return self._apply(fault)

    def _was_reset(self) -> None:
        """The DUT was reset: no timed state of an earlier check is left, and
        what the run learned of its addresses is gone with it."""
        self.settle = {}
        if getattr(self, "dut", None) is not None:
            self.dut.forget()
        self._observe_from(None)

    def _observe_from(self, reborn: float | None) -> None:
        """The DUT started again at port time ``reborn`` (now when None):
        whether it performs DAD is a question of its new boot."""
        if getattr(self, "observer", None) is not None:
            self.observer.reset(reborn or time.monotonic())

    def dut_came_back(self) -> None:
        """The DUT answers again after it stopped (reset, or back by itself):
        what the run learned of it may be gone with its state."""
        self._was_reset()

    def settle_left(self, area: str) -> float:
        """Seconds a check of ``area`` would wait now for a timed state an
        earlier check left (``_wait_for_settle``), without waiting."""
        now = time.monotonic()
        return max([until - now for areas, (until, _) in self.settle.items() if not areas or area in areas] + [0.0])

    def _wait_for_settle(self, ctx) -> None:
        """Wait out a timed state an earlier check left the DUT in (the DUT was
        not reset since), so that it does not decide this check's verdict; a
        state that matters only to other areas' checks is kept for them (and
        runs out meanwhile)."""
        now, area = time.monotonic(), ctx.check.area
        mine = [state for areas, state in self.settle.items() if not areas or area in areas]
        self.settle = {areas: state for areas, state in self.settle.items()
                       if areas and area not in areas and state[0] > now}
        if not mine:
            return
        until, why = max(mine)
        left = until - now
        if left > 0:
            ctx.note(f"waiting {left:.1f} s before the first probe: {why}")
            ctx.measure("settle_wait_s", round(left, 1))
            ctx.wait(left)

    def _require_reachable(self, ctx) -> None:
        """Before the check's probes the DUT must answer; on a DUT the run does
        not rebuild, one that stopped answering since the last part is given
        the time to come back (core/liveness.py) before the part is judged."""
        try:
            ctx.require_reachable()
        except BenchError:
            if self.liveness is None:
                raise
            self.liveness.silent_before(ctx)
            ctx.require_reachable()

    def _apply(self, fault) -> AppliedFault:
        self.lab.dut_faulted = True
        if self.lab.stand_in is not None:
            return self.lab.stand_in.apply_fault(fault)
        addrs = {"mac": self.target.dut_mac, "link_local": self.dut.link_local,
                 "addresses": [self.dut.link_local, *self._safe_addresses()], "prefix": str(self.target.link_prefix)}
        return apply_fault(self.lab, fault, addrs)

    def probed(self) -> tuple:
        """(target, control, DutView) of the DUT the check probes: the device
        standing in for the lab's DUT under the check's DUT configuration
        (lab/stand_in.py), else the target's own."""
        stand_in = self.lab.stand_in if self.lab else None
        if stand_in is None:
            return self.target, self.control, self.dut

        def make(target):
            control = VmConsoleControl(stand_in)
            return control, DutView(target, control, stand_in.link_local, self.port)

        return stand_in.view(self.target, self.port, make)

    # -- what the bench has besides the tester port (the embedded lab's; NotSupported elsewhere) --------
    def _managed_lab(self, what: str):
        if self.lab is None or self.lab.external_dut:
            raise NotSupported(f"{what}: only the embedded lab has it (a target file names its own)")
        return self.lab

    def client_node(self, service: str, also: frozenset[str] = frozenset()) -> tuple[str, str | None, Path]:
        """A node on the DUT's link running ``service`` (and the lab's services
        ``also``), for clients a check runs there: (its network namespace, its
        address, a work directory)."""
        lab = self._managed_lab(f"a {service} node on the link")
        lab.ensure_services(set(lab.wanted) | set(also) | {service})
        svc = lab.service(service)
        if svc is None or not svc.running():
            raise BenchError(f"the lab topology has no {service} service (fixtures/lab/topology.yaml)")
        return lab.ns(svc.node), svc.address, lab.workdir

    def service_setting(self, service: str, name: str):
        """A setting of a service the bench runs for the DUT (e.g. nfs-ganesha's
        ``export_path``), or None."""
        svc = self.lab.service(service) if self.lab else None
        return getattr(svc, name, None) if svc is not None else None

    def link_mtu(self, mtu: int):
        """A context in which the DUT's link (switch, DUT, clients, tester) is at ``mtu``."""
        return self._managed_lab(f"changing the link MTU to {mtu}").link_mtu(mtu)

    @property
    def captures_the_link(self) -> bool:
        """The tester's capture sees frames between other nodes and the DUT
        (the lab's switch floods: a session of a client node is on it)."""
        return self.lab is not None

    def restart_dut(self) -> float:
        """Reboot the DUT in the middle of a check, so that its start-up is on
        the wire (the lab keeps the check's fault in force, and the DUT keeps
        what a device keeps across a reboot: leases, DUID)."""
        if not self.lab or self.lab.external_dut:
            t = self.control.reset()
            self._was_reset()
            return t
        if self._applied:
            self._applied.remove()
        t = self.lab.reset_dut(boot_sysctl=self._fault.boot_sysctl if self._fault else None, wait=False,
                               config=self.lab.dut_config, keep_state=True)
        self._observe_from(self.lab.dut_reborn_at)
        if self._fault:
            self._applied = self._apply(self._fault)
        return t

    def _bench_counters(self) -> dict:
        """Error counters of everything on the tester's side of the wire:
        the tester port, the capture, a fault's impostor and repairer."""
        out = {"port": (self.port.rx_errors if self.port else 0, getattr(self.port, "last_error", None)),
               "capture": (1 if self.capture and self.capture.error else 0,
                           self.capture.error if self.capture else None)}
        applied = self._applied
        imp = getattr(applied, "impostor", None)
        if imp is not None:
            out["impostor"] = (imp.port.rx_errors, getattr(imp.port, "last_error", None))
        rep = getattr(applied, "repairer", None)
        if rep is not None:
            out["repairer"] = (rep.errors, "its rule raised on a packet it was given")
        return out

    @staticmethod
    def _bench_broke(before: dict, after: dict) -> str | None:
        """Counters that moved during the check, as one line (None: none moved)."""
        moved = []
        for name, (n, last) in after.items():
            n0 = before.get(name, (0, None))[0]
            if n > n0:
                moved.append(f"{name}: {n - n0} error(s){' (' + last + ')' if last else ''}")
        return "; ".join(moved) or None

    def _lost_now(self) -> str | None:
        """Why the bench cannot go on, now: the tester interface gone or down, the run directory not
        writable (a pcap or a record could not be written), or the capture ended (no part could keep its pcap)."""
        lost = self.port.lost() if self.port else None
        if lost:
            return lost
        err = self.capture.write_error if self.capture else None
        if err is not None:
            return f"the run directory {self.run_dir} cannot be written ({err.strerror or err})"
        died = self.capture.died() if self.capture else None
        if died:
            return died
        return self.recorder.error if self.recorder else None

    def _safe_addresses(self) -> list[str]:
        try:
            return self.control.addresses()
        except (NotSupported, BenchError):
            return list(self.target.dut_global)

    def run(self, c: Check, part: Part, *, fault: str | None = None, setup: str | None = None) -> Result:
        started = _now_iso()
        t0 = time.monotonic()
        expected = c.expect_of(part)
        pcap = pcap_path_for(self.run_dir, c.id, part.letter, c.ipv6ready_of(part),
                             suffix=f"@{setup}" if setup and setup != "as-is" else "")
        if fault and not self.lab:
            raise UsageError("faults can only be applied to the embedded lab")
        if fault and self.dut_fault:
            raise UsageError(f"the lab DUT carries fault {self.dut_fault} for the whole run (target lab.fault): "
                             "prove checks on a healthy lab target")
        ready = self.plan.take(c, part) if self.plan is not None and not fault else None
        if ready is None and self.plan is not None and not fault:
            fill.before(self, c, part)  # other parts run while this one would wait (core/fill.py)
            started, t0 = _now_iso(), time.monotonic()  # the part's own time begins after theirs
            ready = self.run_unit(c, part)
        if ready is not None:
            outcome, ctx, evidence, started, duration = ready
            return self._record(self._result(c, part, outcome, ctx, expected, evidence, started, duration, fault,
                                             setup or "as-is"))
        outcome, ctx, evidence = self._alone(c, part, fault, pcap)
        return self._record(self._result(c, part, outcome, ctx, expected, evidence, started, time.monotonic() - t0,
                                         fault, setup or ("fault:" + fault if fault else "as-is")))

    def run_unit(self, c: Check, part: Part) -> tuple | None:
        """With a plan: ``part`` and the parts of its check that run beside it
        (core/together.py), the others' results kept for their turn; returns
        ``part``'s (outcome, ctx, evidence, started, duration), or None when it
        runs alone."""
        batch = self.plan.batch(self, c, part)
        if len(batch) < 2:
            return None
        pcap = pcap_path_for(self.run_dir, c.id, "".join(p.letter or "" for p in batch), c.ipv6ready_of(part))
        done = run_batch(self, c, batch, pcap)
        for p in batch[1:]:
            self.plan.keep(c, p, done[p.letter])
        return done[part.letter]

    def run_ahead(self, c: Check, part: Part, waiting: str, until: str = "its first probe") -> None:
        """Run ``part`` (and the parts beside it) before its turn, while the
        part ``waiting`` would wait, keeping its result for its turn
        (core/fill.py)."""
        ready = self.run_unit(c, part)
        if ready is None:
            started, t0 = _now_iso(), time.monotonic()
            pcap = pcap_path_for(self.run_dir, c.id, part.letter, c.ipv6ready_of(part))
            outcome, ctx, evidence = self._alone(c, part, None, pcap)
            ready = (outcome, ctx, evidence, started, time.monotonic() - t0)
        self.plan.keep(c, part, ready)
        if ready[1] is not None:
            ready[1].note(f"ran before its turn in the plan, while {waiting} waited to make {until} (core/fill.py)")
            ready[1].measurements["ran_ahead_of"] = waiting

    def _alone(self, c: Check, part: Part, fault: str | None, pcap):
        """The part on its own: its attempt, what it formed, and its retry where the table may have been full."""
        outcome, ctx, evidence = self._attempt(c, part, fault, pcap)
        if ctx is not None and self.liveness is not None and not self.bench_lost:  # (a lost bench asks nothing more)
            unformed = self.table.settle(ctx)  # which of its fresh prefixes the DUT formed an address in
            if self.table_discovery:
                outcome, ctx, evidence = self._retry_if_full(c, part, fault, pcap, outcome, ctx, evidence, unformed)
        return outcome, ctx, evidence

    def _record(self, result: Result) -> Result:
        if self.recorder:
            self.recorder.write(result)
        return result

    @property
    def table_discovery(self) -> bool:
        """The run finds the DUT's address table itself (core/room.py): a DUT
        it does not rebuild, whose table size the target file does not give."""
        return self.liveness is not None and self.table.declared is None

    def _retry_if_full(self, c: Check, part: Part, fault, pcap, outcome: Outcome, ctx: CheckContext,
                       evidence: dict, unformed):
        """A part that did not PASS while its fresh prefix formed no address and
        the DUT held addresses of the run's earlier prefixes: its table may be
        full.  Wait until they expire and run the part once more (core/room.py)."""
        key = result_key(c.id, part.letter)
        suspicion = self.table.suspect(ctx, outcome, unformed)
        if suspicion is None or (self.liveness is not None and self.liveness.dead):
            return outcome, ctx, evidence
        first = reason_for(outcome, c.expect_of(part))
        wait = self.table.room_for_retry(ctx, suspicion)
        if wait is None:
            why = (f"the DUT formed no address in {suspicion.prefix} while it held {suspicion.held} address(es) of "
                   f"the run's earlier prefixes: its address table looks full ({suspicion.size} addresses with its "
                   "own), and they outlast timing.address_room_wait_s")
            self.table.parts[key] = "not judged"
            ctx.note(why)
            return (NotJudged(ADDRESS_ROOM, self.table.found_at or JUDGED_BY["global-address"], why).outcome(), ctx,
                    evidence)
        ctx.note(f"the DUT formed no address in {suspicion.prefix} while it held {suspicion.held} address(es) of the "
                 f"run's earlier prefixes: its address table may be full ({suspicion.size} addresses with its own); "
                 f"waiting {wait:.1f} s for them to expire, then running the part again")
        fill.meanwhile(self, c, part, wait)  # other parts run while the addresses expire (core/fill.py)
        retry_pcap = pcap.with_name(pcap.stem + "@retry" + pcap.suffix)
        outcome2, ctx2, evidence2 = self._attempt(c, part, fault, retry_pcap, attempt=2)
        if ctx2 is None:
            return outcome2, ctx2, evidence2
        unformed2 = self.table.settle(ctx2)
        ctx2.timeline[:0] = [(0.0, f"first attempt ({ctx.t0 - ctx2.t0:+.1f} s): {first}"),
                             (0.0, f"waited {wait:.1f} s for room in the DUT's address table, then ran the part again")]
        ctx2.measurements["address_room_wait_s"] = round(ctx2.measurements.get("address_room_wait_s", 0) + wait, 1)
        ctx2.measurements["first_attempt"] = {"verdict": str(outcome.verdict), "reason": first,
                                              "pcap": evidence.get("pcap")}
        if not unformed2:
            self.table.confirm(key, suspicion)
            ctx2.note(f"the DUT's address table holds {self.table.discovered} addresses (discovered: "
                      f"{self.table.evidence})")
        elif any(f.held == 0 for f in unformed2):
            self.table.refute()  # it formed nothing with room in the table: not a full table
            ctx2.note("the DUT formed no address with room in its table either: the table was not the cause")
        evidence2["pcap_first_attempt"] = evidence.get("pcap")
        return outcome2, ctx2, evidence2

    def link_prefix_for(self, c: Check) -> None:
        """On a DUT the run does not rebuild: the tester's link prefix as the
        check's Common Test Setup has it."""
        if not self.lab and "exclusive_router" in c.needs:
            self.dut.withdraw_link_prefix()  # a reset DUT would not have the tester's link prefix either
        elif not self.lab:
            self.dut.restore_link_prefix()  # (the tester gave it: the only router, Common Test Setup)

    def blocked(self, c: Check, part: Part) -> Outcome | None:
        """The part's outcome when it is not to be run at all: not applicable,
        the bench lost, the DUT absent or dead, the session not open."""
        why_skip = self.applicability(c, part)
        gone = self.liveness.before_part() if self.liveness is not None else None
        if not why_skip and self.bench_lost is None:
            before = self._lost_now()
            if before:
                self.bench_lost = f"{before} before {result_key(c.id, part.letter)}"
        if why_skip:
            return Outcome(Verdict.SKIP, why_skip)
        if self.bench_lost:
            return Outcome(Verdict.ERROR, f"bench error: {self.bench_lost}{NOT_RUN}")
        if self.absent:
            return Outcome(Verdict.ERROR, f"bench error: {self.absent}")
        if gone is not None:
            return gone  # the DUT stopped answering earlier in the run and did not come back
        if self.open_error:
            return Outcome(Verdict.ERROR, self.open_error)
        return None

    def _attempt(self, c: Check, part: Part, fault: str | None, pcap, attempt: int = 1):
        """One run of the part: (outcome, the check's context or None, evidence)."""
        ctx: CheckContext | None = None
        evidence: dict = {}
        outcome: Outcome
        bench_broke: str | None = None
        counters: dict | None = None
        interrupted = False
        mechanism = fault or self.dut_fault
        lost: str | None = None
        blocked = self.blocked(c, part)
        if blocked is not None:
            outcome = blocked
        else:
            try:
                if self.lab:
                    self._fault = get_fault(mechanism) if mechanism else None
                    self._applied = self._prepare_lab(c, mechanism)
                elif "reset" in c.needs:
                    self.control.reset()
                    self._was_reset()
                self.link_prefix_for(c)
                counters = {**self._bench_counters(), "capture": (0, None)}  # a broken capture stays broken
                self.capture.begin(pcap)
                evidence["pcap"] = shown(pcap)
                target, control, dut = self.probed()
                if target is not self.target:
                    evidence["dut_mac"] = target.dut_mac  # a device standing in for the DUT (the report's dissection)
                ctx = CheckContext(check=c, part=part, port=self.port, target=target, control=control, dut=dut,
                                   session=self, pcap=pcap)
                ctx.attempt = attempt
                self._wait_for_settle(ctx)
                if not self.lab:
                    ctx.make_room_first()
                if c.liveness:
                    self._require_reachable(ctx)
                outcome = judged(c, ctx)
            except KeyboardInterrupt:
                interrupted = True
                raise
            except Exception as exc:
                outcome = outcome_of(exc, ctx)
            finally:
                if self.capture:
                    self.capture.end()
                lost = self._lost_now()  # before any probe: a lost tester is the bench's, never the DUT's silence
                if ctx:
                    ctx.cleanup()
                    if self.liveness is not None and not interrupted and not lost:
                        outcome = self.liveness.after_part(ctx, result_key(c.id, part.letter), outcome)
                if counters is not None:
                    bench_broke = self._bench_broke(counters, self._bench_counters())
                if self._applied:
                    evidence["fault_counters"] = self._applied.counters(self.lab.dut_ns if self.lab else None)
                    self._applied.remove()
                self._applied = None
                self._fault = None
        if lost and outcome.verdict != Verdict.SKIP:
            self.bench_lost = f"{lost} during {result_key(c.id, part.letter)}"
            outcome = Outcome(Verdict.ERROR, f"bench error: {lost} during this part (the check's own verdict would "
                                             f"have been {outcome.verdict}: {outcome.seen})")
        elif bench_broke and outcome.verdict != Verdict.SKIP:
            # the tester's own side failed during the check: whatever the DUT did, the verdict means nothing
            outcome = Outcome(Verdict.ERROR, f"bench error: {bench_broke} (the check's own verdict would have been "
                                             f"{outcome.verdict}: {outcome.seen})")
        return outcome, ctx, evidence

    def _result(self, c, part, outcome: Outcome, ctx, expected, evidence, started, duration, fault, setup) -> Result:
        waiver = self.target.waiver_for(c.id, part.letter)
        waived = outcome.verdict == Verdict.FAIL and waiver is not None and not fault
        exp = outcome.expected or expected
        where = f" (pcap: {evidence['pcap']})" if evidence.get("pcap") else ""
        reason = reason_for(outcome, exp, where)
        if waived:
            reason += f" — waived: {waiver.reason}"
        expired = self.target.expired_waiver_for(c.id, part.letter)
        if expired is not None and outcome.verdict == Verdict.FAIL:
            reason += f" — the waiver for it expired on {expired.expires} ({expired.source}): no longer waived"
        timeline = [f"+{t:.3f}s {m}" for t, m in (ctx.timeline if ctx else [])]
        measurements = {**(ctx.measurements if ctx else {}), **outcome.measurements}
        return Result(
            id=c.id, part=part.letter, title=c.title_of(part), area=c.area, ipv6ready=c.ipv6ready_of(part),
            rfc=c.rfc_of(part), verdict=str(outcome.verdict), reason=reason, expected=exp, seen=outcome.seen,
            evidence=evidence, duration_s=round(duration, 3), started=started, kind=c.kind,
            profile=c.profile_of(part), capabilities=list(c.capabilities_of(part)), waived=waived,
            waiver=waiver.as_dict() if waiver else None, fault=fault, setup=setup, target=self.target.name,
            worker=self.worker, measurements=measurements, timeline=timeline,
            cleanup_errors=list(ctx.cleanup_errors) if ctx else [], fail_side_proven_against=_simulated(c, part),
            problems=list(outcome.problems), dut_sent=list(outcome.dut_sent), precondition=outcome.precondition,
        )


def judged(c: Check, ctx: CheckContext) -> Outcome:
    """The check's own verdict on the part ``ctx`` runs."""
    outcome = c.func(ctx)
    if not isinstance(outcome, Outcome):
        raise TypeError(f"check {c.id} returned {type(outcome).__name__}, not an Outcome")
    return outcome


def outcome_of(exc: Exception, ctx: CheckContext | None) -> Outcome:
    """The part's outcome when ``exc`` ended it (``ctx``: the check's
    context, None when the bench raised before the check began)."""
    if isinstance(exc, NotApplicable | NotSupported):
        return Outcome(Verdict.SKIP, str(exc))
    if isinstance(exc, NotJudged):
        return exc.outcome()
    if isinstance(exc, Deviation):
        return _deviated(ctx, exc)
    if isinstance(exc, BenchError | V6GateError):
        return Outcome(Verdict.ERROR, f"bench error: {exc}")
    tb = traceback.extract_tb(exc.__traceback__)[-1]
    return Outcome(Verdict.ERROR, f"harness error (a bug in v6gate, not the DUT): "
                                  f"{type(exc).__name__}: {exc} at {Path(tb.filename).name}:{tb.lineno}")


def _deviated(ctx: CheckContext | None, exc: Deviation) -> Outcome:
    """The verdict of a check that ended on a Deviation: NOT_JUDGED when
    another check judges the step, else the check's FAIL, the step named."""
    if ctx is None:  # raised by the bench before the check began: not the DUT's
        return Outcome(Verdict.ERROR, f"harness error (a bug in v6gate, not the DUT): a Deviation before the check "
                                      f"began: {exc}")
    if exc.judged_elsewhere(ctx.check.id):
        return ctx.not_judged(exc.name or "setup", exc.judged_by, str(exc)).outcome()
    return ctx.failed(str(exc))


def _simulated(c: Check, part: Part) -> str | None:
    """'simulated peer: ...' when the part's FAIL side is proven only against
    the project's own simulated peer (controls), else None."""
    name = c.fault_of(part)
    try:
        why = get_fault(name).simulated_peer if name else None
    except V6GateError:
        return None
    return f"simulated peer: {why}" if why else None
