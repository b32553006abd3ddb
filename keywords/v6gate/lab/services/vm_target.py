"""The lab's kernel storage target (area ``storage``): a real kernel's NVMe/TCP
target and NFS server, in a VM.

This machine's kernel has no NVMe target (``CONFIG_NVME_TARGET`` unset), no
user-space NVMe/TCP target can be installed from the registries it reaches,
and ganesha's VFS export hands out no NFSv4 referrals (docs/storage.md).
Debian 12's own kernel has both: ``tools/setup`` takes its ``vmlinuz`` and
the modules of nvmet / nvmet-tcp and nfsd from the linux-image package into
``build/vm-target`` (``apt-get download``: the package is not installed).
This service boots that kernel in QEMU (TCG: this machine's KVM did not boot
it) with a busybox init (``fixtures/lab/vm-target/init``), on a TAP port of
the lab's link bridge: a second device on the DUT's link with its own MAC
and a static global address, serving one NVMe subsystem (a 64 MiB file) on
one NVMe/TCP port bound to that address, and NFSv4 with a referral (knfsd;
the export cache written by the init, as rpc.mountd would).  The init
leaves a shell on the VM's serial console (a unix socket in the lab's work
directory); ``console_exec`` runs a command there, which is how the faults
reconfigure the target (``{lab_dir}/dut-vm-exec``,
fixtures/faults/storage.yaml).

Host paths: nothing outside the lab's work directory (the initramfs, the
console socket and log); the VM's disk is a tmpfs inside the VM.  QEMU runs
in the switch namespace as the lab's child; stopping the service kills it
and deletes its TAP.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import secrets
import shutil
import socket
import stat
import sys
import time
from pathlib import Path

from ...errors import LabError
from ...paths import FIXTURES, ROOT
from ...util.proc import ip_batch, run
from ..daemon import Daemon
from . import Service, service

IMAGE = ROOT / "build" / "vm-target"
FILES = FIXTURES / "lab" / "vm-target"
BUSYBOX = "/bin/busybox"
READY = "v6gate-vm: ready"
FAILED = "v6gate-vm: failed"


def _cpio_newc(entries: list[tuple[str, int, bytes]]) -> bytes:
    """An initramfs archive (cpio "newc"): ``(path, mode, data)`` entries; a
    symlink's data is its target."""
    out = bytearray()

    def add(name: str, mode: int, data: bytes, ino: int) -> None:
        nb = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0)
        out.extend(b"070701" + b"".join(b"%08X" % v for v in fields) + nb)
        out.extend(b"\0" * (-(110 + len(nb)) % 4))
        out.extend(data)
        out.extend(b"\0" * (-len(data) % 4))

    for ino, (name, mode, data) in enumerate(entries, start=1):
        add(name, mode, data, ino)
    add("TRAILER!!!", 0, b"", 0)
    return bytes(out)


def build_initramfs(dest: Path) -> Path:
    """The VM's root: busybox (static), the init and its helpers, the modules in load order."""
    if not (IMAGE / "ready").is_file():
        raise LabError(f"the VM target's kernel is not prepared ({IMAGE}/ready missing): run ./v6gate setup")
    if not os.path.isfile(BUSYBOX):
        raise LabError(f"{BUSYBOX} not found: apt-get install busybox-static (./v6gate setup)")
    order = [ln.strip() for ln in (FILES / "modules").read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    d, x, f = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o755, stat.S_IFREG | 0o644
    entries: list[tuple[str, int, bytes]] = [(p, d, b"") for p in
                                             ("bin", "dev", "proc", "sys", "tmp", "modules")]
    entries += [("bin/busybox", x, Path(BUSYBOX).read_bytes()), ("init", x, (FILES / "init").read_bytes()),
                ("bin/v6g-port", x, (FILES / "v6g-port").read_bytes()),
                ("bin/v6g-unport", x, (FILES / "v6g-unport").read_bytes()),
                ("bin/v6g-referral", x, (FILES / "v6g-referral").read_bytes()),
                ("bin/v6g-refer", x, (FILES / "v6g-refer").read_bytes()),
                ("bin/v6g-nfs-client", x, (FILES / "v6g-nfs-client").read_bytes()),
                ("modules/order", f, ("\n".join(order) + "\n").encode())]
    for m in order:
        path = IMAGE / "modules" / m
        if not path.is_file():
            raise LabError(f"{path} missing: the VM target's kernel is incomplete; rm -r {IMAGE} and run "
                           "./v6gate setup")
        entries.append((f"modules/{m}", f, path.read_bytes()))
    dest.write_bytes(_cpio_newc(entries))
    return dest


def console_exec(sock: str | Path, command: str, timeout: float = 20.0) -> tuple[int, str]:
    """Run ``command`` in the VM's console shell: (its exit status, its
    output: what it printed between a begin and an end marker, so that the
    shell's banner or prompt, still buffered on the console, stays out)."""
    tag = secrets.token_hex(4)
    marker = re.compile(rf"V6G-BEGIN-{tag}\r?\n(.*?)V6G-END-{tag}-(\d+)", re.S)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        s.connect(str(sock))
        s.sendall(f"echo V6G-BEGIN-{tag}; {command}; echo V6G-END-{tag}-$?\n".encode())
        buf = b""
        while True:
            m = marker.search(buf.decode(errors="replace"))
            if m:
                return int(m.group(2)), m.group(1).replace("\r", "").strip()
            if time.monotonic() > deadline:
                raise LabError(f"the VM target's console did not finish {command!r} in {timeout:g} s "
                               f"(output: {buf[-300:]!r})")
            chunk = s.recv(65536)
            if not chunk:
                raise LabError(f"the VM target's console closed during {command!r}")
            buf += chunk
    except OSError as exc:
        raise LabError(f"the VM target's console {sock}: {exc}") from None
    finally:
        s.close()


@service("vm-target")
class VmTarget(Service):
    #: address: the VM's static global address on the DUT's link; mac: its NIC's
    defaults = {"address": "2001:db8:1::4420/64", "mac": "02:00:00:00:44:20", "port": 4420,
                "nqn": "nqn.2026-11.test.v6gate:nvme-ns1", "mb": 64, "memory_mb": 256, "ready_s": 90,
                "client": "2001:db8:1::c"}
    tap = "vmtap0"

    @property
    def address(self) -> str:
        return str(ipaddress.ip_interface(self.params["address"]).ip)

    def start(self) -> None:
        p = self.params
        work = self.lab.workdir / f"{self.node}-{self.sid}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        self.console = work / "console.sock"
        self.console_log = work / "console.log"
        initrd = build_initramfs(work / "initramfs.cpio")
        lan = self.spec.get("iface") or next(iter(self.lab.dut_node.ifaces))
        link = self.lab.topology.links[lan]  # a node's interfaces are named after their links
        with contextlib.suppress(Exception):
            ip_batch([f"link del {self.tap}"], self.lab.switch_ns, what="old VM target TAP")
        ip_batch([f"tuntap add mode tap name {self.tap}",
                  f"link set {self.tap} mtu {link.mtu} master br-{link.name} up"],
                 self.lab.switch_ns, what="the VM target's TAP")
        ip = ipaddress.ip_interface(p["address"])
        cmdline = (f"console=ttyS0 panic=-1 quiet v6g.addr={p['address']} v6g.hex={ip.ip.packed.hex()} "
                   f"v6g.nqn={p['nqn']} v6g.port={p['port']} v6g.mb={p['mb']} v6g.client={p['client']}")
        argv = ["qemu-system-x86_64", "-accel", "tcg", "-m", str(p["memory_mb"]), "-smp", "1",
                "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
                "-kernel", str(IMAGE / "vmlinuz"), "-initrd", str(initrd), "-append", cmdline,
                "-chardev", f"socket,id=con,path={self.console},server=on,wait=off,logfile={self.console_log}",
                "-serial", "chardev:con",
                "-netdev", f"tap,id=n0,ifname={self.tap},script=no,downscript=no",
                "-device", f"virtio-net-pci,netdev=n0,mac={p['mac']},romfile="]
        dmn = Daemon("qemu-vm-target", argv, self.lab.switch_ns, work / "qemu.log").start()
        self.daemons = [dmn]
        self.boot_s = self._wait_ready(dmn, float(p["ready_s"]))
        helper = self.lab.workdir / f"{self.node}-vm-exec"
        pypath = ROOT / "keywords"
        helper.write_text(f"#!/bin/sh\nPYTHONPATH={pypath} exec {sys.executable} -m v6gate.lab.services.vm_target "
                          f"{self.console} \"$*\"\n")
        helper.chmod(0o755)

    def _wait_ready(self, dmn: Daemon, timeout: float) -> float:
        t0 = time.monotonic()
        while True:
            text = self.console_log.read_text(errors="replace") if self.console_log.exists() else ""
            if FAILED in text:
                line = next(ln for ln in text.splitlines() if FAILED in ln)
                raise LabError(f"the VM target did not come up: {line.strip()} (console: {self.console_log})")
            if READY in text:
                return time.monotonic() - t0
            if not dmn.alive():
                raise LabError(f"qemu (the VM target) exited at start: {dmn.log_tail()}")
            if time.monotonic() - t0 > timeout:
                raise LabError(f"the VM target was not ready after {timeout:g} s (console: "
                               f"{self.console_log}: {text.strip().splitlines()[-1:] or 'empty'})")
            time.sleep(0.1)

    def stop(self) -> None:
        super().stop()
        if os.path.exists(f"/run/netns/{self.lab.switch_ns}"):
            run(["ip", "link", "del", self.tap], ns=self.lab.switch_ns, check=False, what="VM target TAP")

    def exec(self, command: str, timeout: float = 20.0) -> tuple[int, str]:
        return console_exec(self.console, command, timeout)


def main(argv: list[str]) -> int:
    """``python -m v6gate.lab.services.vm_target SOCKET COMMAND``: the faults' way into the VM."""
    if len(argv) != 2:
        print("usage: vm_target SOCKET COMMAND", file=sys.stderr)
        return 2
    try:
        rc, out = console_exec(argv[0], argv[1])
    except LabError as exc:
        print(f"vm-target: {exc}", file=sys.stderr)
        return 3
    if out:
        print(out)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
