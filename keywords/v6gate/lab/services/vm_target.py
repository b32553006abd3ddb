"""The lab's VM: a real kernel (Debian 12's) on the lab's link, for what this
machine's kernel cannot do: the NVMe/TCP target and NFS server of area
``storage``, the IPsec end node of areas ``ipsec`` and ``ikev2``.

This machine's kernel has no NVMe target (``CONFIG_NVME_TARGET`` unset) and
no ESP (``ip xfrm state add ... proto esp`` fails), no user-space NVMe/TCP
target can be installed from the registries it reaches, and ganesha's VFS
export hands out no NFSv4 referrals (docs/storage.md).  Debian 12's own
kernel has all of them: ``tools/setup`` takes its ``vmlinuz`` and the
modules the VM's roles load from the linux-image package into
``build/vm-target`` (``apt-get download``: the package is not installed).
This service boots that kernel in QEMU (TCG: this machine's KVM did not boot
it) with a busybox init (``fixtures/lab/vm-target/init``) on a TAP port of
the lab's link bridge: a device on the DUT's link with its own MAC and a
static global address.  What it runs comes from its roles
(``fixtures/lab/vm-target/roles.yaml``: kernel modules, host programs copied
with their shared libraries, scripts): ``storage`` serves one NVMe subsystem
(a 64 MiB file) on one NVMe/TCP port bound to that address and NFSv4 with a
referral (knfsd; the export cache written by its start script, as rpc.mountd
would); ``ipsec`` has xfrm with ESP and iproute2's ``ip`` (``v6g-sa``).  The
init leaves a shell on the VM's serial console (a unix socket in the lab's
work directory); ``console_exec`` runs a command there, which is how the
faults reconfigure it (``{lab_dir}/dut-vm-exec``,
fixtures/faults/storage.yaml) and how it stands in for the DUT
(``lab/stand_in.py``).

Host paths: nothing outside the lab's work directory (the initramfs, the
console socket and log); the VM's disk is a tmpfs inside the VM.  QEMU runs
in the switch namespace as the lab's child; stopping the service kills it
and deletes its TAP.
"""

from __future__ import annotations

import contextlib
import glob
import ipaddress
import os
import re
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

from ... import yamlfile
from ...errors import LabError
from ...paths import FIXTURES, ROOT
from ...util.proc import ip_batch, need, run
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


#: where a role's pieces live (fixtures/lab/vm-target/roles.yaml); ``base`` is in every VM
ROLES_FILE = FILES / "roles.yaml"
ROLE_KEYS = ("modules", "binaries", "host_files", "files", "start", "reset")


def load_roles(path: Path = ROLES_FILE) -> dict[str, dict]:
    """The VM's roles (fixtures/lab/vm-target/roles.yaml), each checked for known keys."""
    doc = yamlfile.load_data_file(path) or {}
    if not isinstance(doc, dict) or "base" not in doc:
        raise LabError(f"{path}: a mapping of roles, 'base' among them")
    for name, spec in doc.items():
        unknown = set(spec or {}) - set(ROLE_KEYS)
        if unknown:
            raise LabError(f"{path}: role {name!r} has unknown keys {sorted(unknown)} (known: {', '.join(ROLE_KEYS)})")
    return {name: dict(spec or {}) for name, spec in doc.items()}


def library_closure(paths: list[str]) -> list[str]:
    """The shared libraries (and the dynamic loader) ``paths`` need, by ``ldd``: the host's own, as the VM's
    userland is the host's (Debian 12).  A static executable needs none."""
    need("ldd")
    out: list[str] = []
    for path in paths:
        cp = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=30)
        if cp.returncode != 0:  # "not a dynamic executable"
            continue
        for line in cp.stdout.splitlines():
            if "not found" in line:
                raise LabError(f"{path} needs a library the host does not have: {line.strip()}")
            lib = next((w for w in line.split() if w.startswith("/")), None)
            if lib and lib not in out:
                out.append(lib)
    return out


def _host_files(spec: dict) -> list[str]:
    """A role's host files: its binaries, its host_files (globs), and the libraries they link."""
    files: list[str] = []
    for b in spec.get("binaries") or []:
        if not os.path.isfile(b):
            raise LabError(f"{b} (a binary of the lab VM's roles) is not on this machine: run ./v6gate setup")
        files.append(b)
    for pattern in spec.get("host_files") or []:
        found = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
        if not found:
            raise LabError(f"{pattern} (host files of the lab VM's roles) matches nothing: run ./v6gate setup")
        files += found
    objects = [f for f in files if f in (spec.get("binaries") or []) or ".so" in os.path.basename(f)]
    return files + [lib for lib in library_closure(objects) if lib not in files]


def build_initramfs(dest: Path, roles: list[str] | tuple[str, ...] = ("storage",)) -> Path:
    """The VM's root: busybox (static), the init, and each role's modules (in load order), host programs
    with their libraries, files and scripts (fixtures/lab/vm-target/roles.yaml)."""
    if not (IMAGE / "ready").is_file():
        raise LabError(f"the VM target's kernel is not prepared ({IMAGE}/ready missing): run ./v6gate setup")
    if not os.path.isfile(BUSYBOX):
        raise LabError(f"{BUSYBOX} not found: apt-get install busybox-static (./v6gate setup)")
    defined = load_roles()
    unknown = [r for r in roles if r not in defined or r == "base"]
    if unknown:
        raise LabError(f"the lab VM has no role {', '.join(unknown)} (fixtures/lab/vm-target/roles.yaml: "
                       f"{', '.join(r for r in defined if r != 'base')})")
    chosen = [("base", defined["base"])] + [(r, defined[r]) for r in roles]
    d, x, f = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o755, stat.S_IFREG | 0o644
    dirs = ["bin", "dev", "proc", "sys", "tmp", "run", "modules", "roles"]
    files: dict[str, tuple[int, bytes]] = {"bin/busybox": (x, Path(BUSYBOX).read_bytes()),
                                           "init": (x, (FILES / "init").read_bytes())}
    order: list[str] = []
    for name, spec in chosen:
        for m in spec.get("modules") or []:
            path = IMAGE / "modules" / m
            if not path.is_file():
                raise LabError(f"{path} missing: the VM target's kernel is incomplete; rm -r {IMAGE} and run "
                               "./v6gate setup")
            if m not in order:
                order.append(m)
                files[f"modules/{m}"] = (f, path.read_bytes())
        for inside, here in (spec.get("files") or {}).items():
            files[inside.lstrip("/")] = (x, (FILES / here).read_bytes())
        for script in ("start", "reset"):
            if spec.get(script):
                files[f"roles/{name}.{script}"] = (x, (FILES / spec[script]).read_bytes())
        for host in _host_files(spec):
            files[host.lstrip("/")] = (os.stat(host).st_mode & 0o7777 | stat.S_IFREG, Path(host).read_bytes())
    files["modules/order"] = (f, ("\n".join(order) + "\n").encode())
    for path in files:  # every parent directory, before the files in it
        parent = os.path.dirname(path)
        while parent and parent not in dirs:
            dirs.append(parent)
            parent = os.path.dirname(parent)
    entries = [(p, d, b"") for p in sorted(dirs, key=lambda p: p.count("/"))]
    entries += [(p, mode, data) for p, (mode, data) in files.items()]
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
    #: address: the VM's static global address on the DUT's link; mac: its NIC's; roles: what it runs
    #: (fixtures/lab/vm-target/roles.yaml; the storage role's own settings: port, nqn, mb, client); ipv4: an
    #: IPv4 address/length besides (none by default: the lab is IPv6-only unless a part needs IPv4); icount:
    #: QEMU's -icount value (the guest's clock counts instructions); tap: its
    #: TAP port on the link's bridge; exec_helper: the lab-directory script the faults call to reach its console
    defaults = {"address": "2001:db8:1::4420/64", "mac": "02:00:00:00:44:20", "port": 4420,
                "nqn": "nqn.2026-11.test.v6gate:nvme-ns1", "mb": 64, "memory_mb": 256, "ready_s": 90,
                "client": "2001:db8:1::c", "roles": ["storage"], "tap": "vmtap0", "exec_helper": "dut-vm-exec"}

    @property
    def address(self) -> str:
        return str(ipaddress.ip_interface(self.params["address"]).ip)

    @property
    def tap(self) -> str:
        return self.params["tap"]

    def start(self) -> None:
        p = self.params
        work = self.lab.workdir / f"{self.node}-{self.sid}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        self.console = work / "console.sock"
        self.console_log = work / "console.log"
        roles = list(p["roles"])
        initrd = build_initramfs(work / "initramfs.cpio", roles)
        lan = self.spec.get("iface") or next(iter(self.lab.dut_node.ifaces))
        link = self.lab.topology.links[lan]  # a node's interfaces are named after their links
        with contextlib.suppress(Exception):
            ip_batch([f"link del {self.tap}"], self.lab.switch_ns, what="old VM target TAP")
        ip_batch([f"tuntap add mode tap name {self.tap}",
                  f"link set {self.tap} mtu {link.mtu} master br-{link.name} up"],
                 self.lab.switch_ns, what="the VM target's TAP")
        ip = ipaddress.ip_interface(p["address"])
        cmdline = (f"console=ttyS0 panic=-1 quiet v6g.addr={p['address']} v6g.hex={ip.ip.packed.hex()} "
                   f"v6g.roles={','.join(roles)} v6g.nqn={p['nqn']} v6g.port={p['port']} v6g.mb={p['mb']} "
                   f"v6g.client={p['client']}" + (f" v6g.addr4={p['ipv4']}" if p.get("ipv4") else ""))
        argv = ["qemu-system-x86_64", "-accel", "tcg", "-m", str(p["memory_mb"]), "-smp", "1",
                "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
                "-kernel", str(IMAGE / "vmlinuz"), "-initrd", str(initrd), "-append", cmdline,
                "-chardev", f"socket,id=con,path={self.console},server=on,wait=off,logfile={self.console_log}",
                "-serial", "chardev:con",
                "-netdev", f"tap,id=n0,ifname={self.tap},script=no,downscript=no",
                "-device", f"virtio-net-pci,netdev=n0,mac={p['mac']},romfile="]
        if p.get("icount"):  # TCG counting instructions: the guest's clock runs on them while it is busy
            argv += ["-icount", str(p["icount"])]
        dmn = Daemon(f"qemu-{self.sid}", argv, self.lab.switch_ns, work / "qemu.log").start()
        self.daemons = [dmn]
        self.boot_s = self._wait_ready(dmn, float(p["ready_s"]))
        helper = self.lab.workdir / p["exec_helper"]
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
