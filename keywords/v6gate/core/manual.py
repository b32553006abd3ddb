"""The operator-assisted control adapter (``control.adapter: manual``).

For a DUT with no management access (no ssh, no agent): the run pauses,
tells the operator what to do ("reboot the DUT now", "make it ping X",
"make it join group G") and waits for Enter, with a timeout, like TAHI's
manual remote scripts.  A run that is not interactive (``--non-interactive``,
``V6GATE_NON_INTERACTIVE=1``, or no terminal) SKIPs the step with the reason,
and so does an instruction the operator does not confirm in time: neither is
the DUT's fault nor the bench's.

Target file::

    control:
      adapter: manual
      manual: {timeout_s: 300}

The prompts go to the controlling terminal (``/dev/tty``), so they reach the
operator from inside a pytest worker too.
"""

from __future__ import annotations

import ipaddress
import os
import queue
import subprocess
import threading
import time

from .control import Control, NotSupported, filter_spec

DEFAULT_TIMEOUT_S = 300.0


def non_interactive_env() -> bool:
    return os.environ.get("V6GATE_NON_INTERACTIVE", "") not in ("", "0")


class _Done:
    """What ``ping`` returns: the operator already started the pings (a
    finished process, for the checks that wait on it)."""

    returncode = 0
    stdout = None
    stderr = None

    def poll(self):
        return 0

    def wait(self, timeout=None):
        return 0

    def communicate(self, timeout=None):
        return "", ""

    def kill(self):
        pass

    terminate = kill


class ManualControl(Control):
    name = "manual"

    def __init__(self, spec: dict | None = None, interface: str = "", *, stream_in=None, stream_out=None,
                 interactive: bool | None = None, clock=time.monotonic):
        spec = spec or {}
        self.timeout_s = float(spec.get("timeout_s", DEFAULT_TIMEOUT_S))
        self.interface = interface
        self._in, self._out = stream_in, stream_out
        self._why_not = None
        if interactive is False or (interactive is None and non_interactive_env()):
            self._why_not = "the run is non-interactive (--non-interactive)"
        elif self._in is None:
            try:
                tty = open("/dev/tty", "r+", buffering=1)
                self._in = self._out = tty
            except OSError:
                self._why_not = "the run has no terminal to ask the operator on"
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader: threading.Thread | None = None
        self._clock = clock
        self.log: list[tuple[str, str]] = []  # (instruction, outcome): what was asked and what came of it
        if not self._why_not:  # read from the start, so a line typed before a question is not its answer
            self._reader = threading.Thread(target=self._read, name="v6gate-manual-stdin", daemon=True)
            self._reader.start()

    # -- the one mechanism: say what to do, wait for Enter --------------------------------------------------------
    def _read(self) -> None:
        while True:
            line = self._in.readline()
            if not line:
                self._lines.put(None)
                return
            self._lines.put(line)

    def ask(self, instruction: str, *, then: str = "press Enter when done") -> str:
        """Tell the operator ``instruction``; return the line typed before
        the timeout.  NotSupported (SKIP) when nobody can be asked or nobody
        answered in time."""
        if self._why_not:
            self.log.append((instruction, "skipped: " + self._why_not))
            raise NotSupported(f"manual control: {self._why_not}; this step needs the operator to: {instruction}")
        while not self._lines.empty():  # typed before the question: not an answer to it
            if self._lines.get_nowait() is None:
                self._lines.put(None)  # end of input stays the end
                break
        self._out.write(f"\n[v6gate] OPERATOR: {instruction}\n[v6gate] {then} "
                        f"(within {self.timeout_s:g} s; after that the step is skipped) > ")
        self._out.flush()
        try:
            line = self._lines.get(timeout=self.timeout_s)
        except queue.Empty:
            line = None
            why = f"the operator did not confirm within {self.timeout_s:g} s"
        else:
            why = "the operator's input ended (end of file)" if line is None else None
        if line is None:
            self.log.append((instruction, "skipped: " + why))
            raise NotSupported(f"manual control: {why}: {instruction}")
        self.log.append((instruction, "confirmed"))
        return line.strip()

    # -- the adapter's actions ------------------------------------------------------------------------------------------
    def reset(self) -> float:
        t0 = self._clock()
        self.ask("reboot the DUT now (power-cycle or restart it)", then="press Enter once it is up again")
        return self._clock() - t0

    @property
    def can_reset(self) -> bool:
        return self._why_not is None

    def revive(self) -> float:
        t0 = self._clock()
        self.ask("the DUT stopped answering: restart it", then="press Enter once it is up again")
        return self._clock() - t0

    def ping(self, dst, *, size=56, count=1, interface=None, wait_s=2.0):
        where = f" on its interface {interface or self.interface}" if (interface or self.interface) else ""
        self.ask(f"make the DUT ping {dst}{where} with {size}-octet Echo Requests, one a second, and keep it "
                 f"pinging until the next instruction", then="press Enter once the pings are running")
        return _Done()

    def addresses(self) -> list[str]:
        line = self.ask("read the DUT's IPv6 addresses on the link under test",
                        then="type them separated by spaces, then Enter")
        found = []
        for tok in line.replace(",", " ").split():
            try:
                found.append(str(ipaddress.IPv6Address(tok.split("/")[0].split("%")[0])))
            except ValueError:
                continue
        if not found:
            raise NotSupported(f"manual control: no IPv6 address in the operator's answer {line!r}")
        return found

    def listen(self, group, *, mode="exclude", sources=()):
        mode, sources = filter_spec(mode, sources)
        if mode == "exclude" and not sources:
            self.ask(f"make the DUT join the IPv6 multicast group {group} (an application listening to it) and "
                     f"keep it joined until told to leave")
        elif mode == "include" and not sources:
            self.ask(f"make the DUT's application stop listening to {group} (leave it)")
        else:
            self.ask(f"make the DUT's application listening to {group} (join it if it does not) use the source "
                     f"filter {mode.upper()} {{{', '.join(sources)}}} (RFC 3810 §3: receive "
                     f"{'only from' if mode == 'include' else 'from all but'} these sources), in one change, "
                     f"and keep it until the next instruction")

    def unlisten(self, group):
        self.ask(f"make the DUT leave the IPv6 multicast group {group} (stop the listening application)")

    def resolve(self, name, *, family="any", timeout_s=5.0) -> subprocess.Popen:
        raise NotSupported("manual control cannot hand the DUT's resolver answer to the check: set "
                           "control.adapter: ssh with control.ssh.commands.resolve")

    def connect(self, host, port, *, proto="tcp", timeout_s=5.0) -> subprocess.Popen:
        raise NotSupported("manual control cannot time the DUT's connection: set control.adapter: ssh with "
                           "control.ssh.commands.connect")

    def command(self, command, *, timeout_s=60.0) -> str:
        raise NotSupported(f"manual control cannot run a command on the DUT ({command!r}): set control.adapter: ssh")

    def close(self) -> None:
        if self._in is not None and getattr(self._in, "name", "") == "/dev/tty":
            self._in.close()
