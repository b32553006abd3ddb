"""Control adapters: how the harness resets or instructs the DUT between
checks (TAHI's per-OS remote scripts are the precedent).

* ``netns``: the lab's Linux DUT (reset = rebuild its namespace).
* ``ssh``: a real device; every action is a command template from the target
  file, so nothing here assumes what runs on the device.
* ``manual``: an operator does what the run asks (core/manual.py).
* ``none``: nothing can be controlled; checks that need control are SKIPped
  with a reason saying which field would enable them.

Every method raises ``NotSupported`` when the adapter cannot do it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import BenchError
from ..net import packets as P
from ..paths import ROOT
from ..target_values import fill
from ..util.proc import run


class NotSupported(Exception):
    """The control adapter cannot do this (becomes a SKIP with this reason)."""


class Control:
    name = "none"

    def reset(self) -> float:
        raise NotSupported("the DUT cannot be reset: control adapter 'none' (set control.adapter: ssh "
                           "with control.ssh.commands.reset in the target file)")

    def revive(self) -> float:
        """The DUT stopped answering in the middle of a run: bring it back
        (a reset, by default).  Raises NotSupported when the adapter cannot."""
        return self.reset()

    @property
    def can_reset(self) -> bool:
        """Whether ``reset`` can work (without doing it): the checks that
        restart the DUT run, so they judge what needs a fresh boot."""
        return False

    def addresses(self) -> list[str]:
        raise NotSupported("the DUT's addresses cannot be read: control adapter 'none' (list them under "
                           "dut.global in the target file)")

    def ping(self, dst: str, *, size: int = 56, count: int = 1, interface: str | None = None,
             wait_s: float = 2.0) -> subprocess.Popen:
        raise NotSupported("the DUT cannot be told to send an Echo Request: control adapter 'none' (set "
                           "control.ssh.commands.ping in the target file)")

    def resolve(self, name: str, *, family: str = "any", timeout_s: float = 5.0) -> subprocess.Popen:
        """Make the DUT look up ``name`` with its own resolver configuration
        (family: any, inet6, inet).  Returns the running process; its stdout
        holds the addresses found, one per line.  ``name`` may be an address:
        then it is a reverse lookup, and stdout holds the names found."""
        raise NotSupported("the DUT cannot be told to resolve a name: set control.ssh.commands.resolve in the "
                           "target file")

    def connect(self, host: str, port: int, *, proto: str = "tcp", timeout_s: float = 5.0) -> subprocess.Popen:
        """Make the DUT open a connection (tcp) or send a datagram (udp) to
        host:port; host may be a name (resolved by the DUT) or an address.
        Exit status 0 means it connected."""
        raise NotSupported("the DUT cannot be told to open a connection: set control.ssh.commands.connect in the "
                           "target file")

    def listen(self, group: str, *, mode: str = "exclude", sources: Sequence[str] = ()) -> None:
        """Make an application on the DUT listen to the IPv6 multicast
        ``group`` on its interface on the link, with a source filter: RFC
        3810 §3's IPv6MulticastListen(socket, interface, group, filter mode,
        source list).  ``mode`` "exclude" with no ``sources`` is an ordinary
        (any-source) join; "include" with sources a source-specific one; a
        second call for the same group changes that application's filter
        (one state change); "include" with no sources leaves."""
        if sources or mode != "exclude":
            raise NotSupported("the DUT cannot be told to listen with a source filter: set "
                               "control.ssh.commands.listen_filter in the target file")
        raise NotSupported("the DUT cannot be told to listen to a multicast group: set "
                           "control.ssh.commands.listen in the target file")

    def unlisten(self, group: str) -> None:
        """Make the DUT stop listening to ``group`` (MLD Done / leave)."""
        raise NotSupported("the DUT cannot be told to stop listening to a multicast group: set "
                           "control.ssh.commands.unlisten in the target file")

    def command(self, command: str, *, timeout_s: float = 60.0) -> str:
        """Run a command the target file supplies (an area's own setting, e.g.
        the command that makes the DUT release its DHCPv6 lease) on the DUT;
        returns its output.  Raises BenchError when it fails."""
        raise NotSupported("commands cannot be run on the DUT: control adapter 'none' (set control.adapter: ssh "
                           "in the target file)")

    def address_states(self) -> dict[str, str]:
        """The DUT's IPv6 addresses and their state: address -> "preferred"
        or "deprecated" (RFC 4862 §5.5.4)."""
        raise NotSupported("the state of the DUT's addresses (preferred or deprecated) cannot be read through "
                           f"control adapter {self.name!r}")

    def dhcpv6_check_begins(self) -> None:
        """A DHCPv6 check begins: where the harness simulates the DUT's client
        (the lab's faults), it starts without a lease; nothing elsewhere."""

    def release_dhcpv6_lease(self) -> str:
        """Make the DUT's DHCPv6 client release its lease; returns what was
        done, for the check's timeline."""
        raise NotSupported(f"control adapter {self.name!r} cannot make the DUT's DHCPv6 client release its lease")

    def close(self) -> None:
        pass

    def check_exit(self, proc, stderr: str | None = None) -> None:
        """After a command started with ping/resolve/connect has finished:
        raise BenchError when its exit status says the *adapter* failed (ssh
        exit 255: connection refused, timed out, authentication), so that it
        is not read as the DUT's answer."""


class NoControl(Control):
    pass


def filter_spec(mode: str, sources: Sequence[str]) -> tuple[str, list[str]]:
    """``mode`` and ``sources`` validated (a bench error, not the DUT's, when wrong)."""
    if mode not in ("include", "exclude"):
        raise BenchError(f"filter mode {mode!r}: use 'include' or 'exclude'")
    try:
        return mode, [str(ipaddress.IPv6Address(s)) for s in sources]
    except ValueError as exc:
        raise BenchError(f"source filter: {exc}") from None


LISTENER = Path(__file__).resolve().parent.parent / "lab" / "mcast_listener.py"


class NetnsControl(Control):
    """The embedded lab's DUT."""

    name = "netns"

    def __init__(self, lab, ns: str, interface: str):
        self.lab = lab
        self.ns = ns
        self.interface = interface
        self._listeners: dict[str, subprocess.Popen] = {}

    @property
    def can_reset(self) -> bool:
        return self.lab is not None

    def reset(self) -> float:
        if self.lab is None:
            raise NotSupported("this netns DUT is not managed by a lab, so it cannot be rebuilt")
        return self.lab.reset_dut()

    def addresses(self) -> list[str]:
        cp = run(["ip", "-6", "-o", "addr", "show", "dev", self.interface], ns=self.ns, what="read DUT addresses")
        out = []
        for line in cp.stdout.splitlines():
            m = re.search(r"inet6 ([0-9a-f:]+)/\d+", line)
            if m and "tentative" not in line:
                out.append(m.group(1))
        return out

    def ping(self, dst, *, size=56, count=1, interface=None, wait_s=2.0):
        argv = ["ip", "netns", "exec", self.ns, "ping", "-6", "-n", "-q", "-c", str(count), "-s", str(size),
                "-W", str(max(1, int(wait_s)))]
        if interface or ipaddress.IPv6Address(dst.split("%")[0]).is_link_local:
            argv += ["-I", interface or self.interface]
        argv += ["--", dst.split("%")[0]]
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def resolve(self, name, *, family="any", timeout_s=5.0):
        db = {"any": "ahosts", "inet6": "ahostsv6", "inet": "ahostsv4"}[family]
        try:
            ipaddress.ip_address(name)
            db = "hosts"  # an address: gethostbyaddr, the reverse lookup (PTR)
        except ValueError:
            pass
        return subprocess.Popen(["ip", "netns", "exec", self.ns, "timeout", str(timeout_s), "getent", db, "--", name],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def connect(self, host, port, *, proto="tcp", timeout_s=5.0):
        he = self._he_client_config() if proto == "tcp" else None
        if he is not None:
            # DUT configuration he-client: the DUT's applications connect with Happy Eyeballs (lab/he_client.py)
            import sys

            return subprocess.Popen(["ip", "netns", "exec", self.ns, sys.executable, "-m", "v6gate.lab.he_client",
                                     host, str(port), str(timeout_s), str(he)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        code = ("import socket,sys\n"
                "h,p,pr,t=sys.argv[1],int(sys.argv[2]),sys.argv[3],float(sys.argv[4])\n"
                "if pr=='tcp':\n socket.create_connection((h,p),timeout=t).close()\n"
                "else:\n"
                " ai=socket.getaddrinfo(h,p,0,socket.SOCK_DGRAM)[0]\n"
                " s=socket.socket(ai[0],socket.SOCK_DGRAM); s.sendto(b'v6gate',ai[4])\n")
        return subprocess.Popen(["ip", "netns", "exec", self.ns, "python3", "-c", code, host, str(port), proto,
                                 str(timeout_s)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def _he_client_config(self):
        workdir = getattr(self.lab, "workdir", None)
        if workdir is None:
            return None
        from ..lab.services.he_client import CONFIG_NAME

        path = workdir / CONFIG_NAME
        return path if path.exists() else None

    def listen(self, group, *, mode="exclude", sources=()):
        """An application in the DUT namespace (lab/mcast_listener.py) holds
        ``group`` with the filter; a later call changes that application's
        filter in one step (MCAST_MSFILTER)."""
        mode, sources = filter_spec(mode, sources)
        proc = self._listeners.get(group)
        if proc is None or proc.poll() is not None:
            proc = subprocess.Popen(["ip", "netns", "exec", self.ns, "python3", str(LISTENER), self.interface, group],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
            self._listeners[group] = proc
            if proc.stdout.readline().strip() != "ready":
                self.unlisten(group)
                raise BenchError(f"the lab DUT's multicast listener did not start: "
                                 f"{(proc.stderr.read() or '').strip()[-200:] or 'no output'}")
        try:
            proc.stdin.write(" ".join(["set", mode, *sources]) + "\n")
            proc.stdin.flush()
            answer = proc.stdout.readline().strip()
        except OSError:
            answer = ""
        if answer != "ok":
            self.unlisten(group)
            why = answer[4:] if answer.startswith("err ") else (proc.stderr.read() or "").strip()[-200:]
            raise BenchError(f"could not make the lab DUT listen to {group} ({mode} {sources}): {why or 'no answer'}")

    def unlisten(self, group):
        proc = self._listeners.pop(group, None)
        if proc and proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.stdin.close()  # end of input: the listener closes its socket, leaving the group
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(2)
        if proc and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(2)

    def close(self) -> None:
        for group in list(self._listeners):
            self.unlisten(group)

    def address_states(self) -> dict[str, str]:
        cp = run(["ip", "-j", "-6", "addr", "show", "dev", self.interface], ns=self.ns, what="read DUT addresses")
        data = json.loads(cp.stdout or "[]")
        out = {}
        for a in (data[0].get("addr_info", []) if data else []):
            deprecated = bool(a.get("deprecated")) or a.get("preferred_life_time") == 0
            out.setdefault(a.get("local"), "deprecated" if deprecated else "preferred")
        return out

    def dhcpv6_check_begins(self) -> None:
        if self.lab is not None:
            self.lab.dhcpv6_event("fresh")  # a simulated client (lab faults) starts the check without a lease

    def release_dhcpv6_lease(self) -> str:
        if self.lab is None:
            return super().release_dhcpv6_lease()
        self.lab.release_dhcpv6_lease()
        return "the lab DUT's client is told to release its lease (graceful stop)"

    def sh(self, command: str) -> subprocess.CompletedProcess:
        """Run a shell command in the DUT namespace (lab faults only)."""
        return run(["sh", "-c", command], ns=self.ns, what="DUT command")

    def command(self, command, *, timeout_s=60.0):
        return run(["sh", "-c", command], ns=self.ns, what="DUT command", timeout=timeout_s).stdout


class SshControl(Control):
    name = "ssh"

    def __init__(self, spec: dict, interface: str = ""):
        self.spec = spec
        self.interface = interface
        self.commands = spec.get("commands", {})

    def _argv(self, command: str) -> list[str]:
        s = self.spec
        argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={int(s.get('connect_timeout_s', 5))}"]
        if s.get("port"):
            argv += ["-p", str(s["port"])]
        if s.get("identity_file"):
            argv += ["-i", s["identity_file"]]
        # '--': the destination is never an option, whatever it holds (target_values also checked it on load)
        argv += ["--", f"{s['user']}@{s['host']}" if s.get("user") else s["host"]]
        return [*argv, command]

    def _template(self, action: str, field: str, **values) -> str:
        """The target's template for ``action``, filled with the run's values, each quoted for the shell."""
        cmd = self.commands.get(action)
        if not cmd:
            raise NotSupported(f"control.ssh.commands.{action} is not set in the target file ({field})")
        return fill(cmd, action, interface=self.interface, **values)

    def _run(self, command: str, timeout: float = 60) -> str:
        try:
            cp = subprocess.run(self._argv(command), capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            raise BenchError("'ssh' is not installed: apt-get install openssh-client") from None
        except subprocess.TimeoutExpired:
            raise BenchError(f"ssh to {self.spec['host']} timed out running: {command}") from None
        if cp.returncode == 255:
            raise BenchError(f"ssh to {self.spec['host']} failed: {(cp.stderr.strip().splitlines() or ['?'])[-1]}")
        if cp.returncode != 0:
            raise BenchError(f"DUT command failed (exit {cp.returncode}): {command}")
        return cp.stdout

    def command(self, command, *, timeout_s=60.0):
        return self._run(fill(command, "command", interface=self.interface), timeout=timeout_s)

    def check_exit(self, proc, stderr: str | None = None) -> None:
        if isinstance(proc, subprocess.Popen) and proc.returncode == 255:
            err = (stderr or "").strip().splitlines()[-1:]
            if not err and proc.stderr is not None and not proc.stderr.closed:
                try:
                    err = (proc.stderr.read() or "").strip().splitlines()[-1:]
                except (OSError, ValueError):
                    err = ""
            raise BenchError(f"ssh to {self.spec['host']} failed (exit 255){': ' + err[0] if err else ''}: the "
                             "DUT's answer is unknown")

    @property
    def can_reset(self) -> bool:
        return bool(self.commands.get("reset"))

    def reset(self) -> float:
        import time

        t0 = time.monotonic()
        self._run(self._template("reset", "needed to reset the DUT"), timeout=300)
        return time.monotonic() - t0

    def addresses(self) -> list[str]:
        out = self._run(self._template("addresses", "needed to read the DUT's addresses"))
        found = []
        for tok in re.findall(r"[0-9A-Fa-f:]{3,}(?:/\d+)?", out):
            try:
                found.append(str(ipaddress.IPv6Address(tok.split("/")[0])))
            except ValueError:
                continue
        return found

    def ping(self, dst, *, size=56, count=1, interface=None, wait_s=2.0):
        cmd = self._template("ping", "needed to make the DUT send Echo Requests", dst=dst, size=int(size),
                             count=int(count))
        return subprocess.Popen(self._argv(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def resolve(self, name, *, family="any", timeout_s=5.0):
        cmd = self._template("resolve", "needed to make the DUT resolve names", name=name, family=family)
        return subprocess.Popen(self._argv(cmd), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def connect(self, host, port, *, proto="tcp", timeout_s=5.0):
        cmd = self._template("connect", "needed to make the DUT open connections", host=host, port=int(port),
                             proto=proto)
        return subprocess.Popen(self._argv(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def listen(self, group, *, mode="exclude", sources=()):
        mode, sources = filter_spec(mode, sources)
        if mode == "exclude" and not sources and (self.commands.get("listen") or not self.commands.get("listen_filter")):
            self._run(self._template("listen", "needed to make the DUT join multicast groups", group=group))
            return
        self._run(self._template("listen_filter", "needed to make the DUT listen with a source filter: a command "
                                 "taking {group}, {mode} (include|exclude) and {sources}", group=group, mode=mode,
                                 sources=list(sources)))

    def unlisten(self, group):
        self._run(self._template("unlisten", "needed to make the DUT leave multicast groups", group=group))


class VmConsoleControl(Control):
    """The control adapter of a stand-in VM: its serial console's shell."""

    name = "vm-console"

    def __init__(self, stand_in):  # lab/stand_in.py StandIn
        self.stand_in = stand_in
        self.interface = "eth0"

    @property
    def can_reset(self) -> bool:
        return True

    def reset(self) -> float:
        return self.stand_in.prepare()

    def addresses(self) -> list[str]:
        rc, out = self.stand_in.exec("ip -6 -o addr show dev eth0")
        if rc != 0:
            raise BenchError(f"could not read the stand-in DUT's addresses: {out.strip()[-200:]}")
        return [m.group(1) for line in out.splitlines() if "tentative" not in line
                for m in [re.search(r"inet6 ([0-9a-f:]+)/\d+", line)] if m]

    def ping(self, dst, *, size=56, count=1, interface=None, wait_s=2.0):
        dst = dst.split("%")[0]
        ipaddress.IPv6Address(dst)  # an address, never a shell string
        iface = f" -I {shlex.quote(interface or self.interface)}" if interface or P.is_link_scoped(dst) else ""
        command = f"ping -6 -q -c {int(count)} -s {int(size)} -W {max(1, int(wait_s))}{iface} {dst}"
        return subprocess.Popen([sys.executable, "-m", "v6gate.lab.services.vm_target", str(self.stand_in.service.console),
                                 command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={"PYTHONPATH": str(ROOT / "keywords"), "PATH": "/usr/bin:/bin"})

    def command(self, command, *, timeout_s=60.0):
        rc, out = self.stand_in.exec(command, timeout=timeout_s)
        if rc != 0:
            raise BenchError(f"DUT command failed (exit {rc}) on the stand-in's console: {out.strip()[-300:]}")
        return out

    def listen(self, group):
        raise NotSupported("the stand-in VM has no program to join a multicast group with")

    def unlisten(self, group):
        raise NotSupported("the stand-in VM has no program to join a multicast group with")


def control_for(target, lab=None) -> Control:
    adapter = target.control.get("adapter", "none")
    if adapter == "netns":
        return NetnsControl(lab, target.control["netns"], target.control.get("interface", "eth0"))
    if adapter == "ssh":
        return SshControl(target.control["ssh"], target.control.get("interface", ""))
    if adapter == "manual":
        from .manual import ManualControl

        return ManualControl(target.control.get("manual") or {}, target.control.get("interface", ""))
    return NoControl()
