"""strongSwan (Debian 12's 5.9.8 charon and swanctl) as a real IKEv2 peer:
its configuration written from data, one charon per namespace, and what
swanctl says about its SAs.

Used by the lab's IKEv2 DUT (charon inside the VM, kernel-netlink: the VM
kernel's ESP), the interoperability checks' tester-side peer (charon in a
namespace of this machine, whose kernel has no ESP: kernel-libipsec, ESP in
user space over a TUN device, which in 5.9.8 forces UDP encapsulation and
only does tunnel mode), and the project's own test of the tester's IKEv2
against strongSwan (tests/lab/test_ikev2_strongswan.py).

Host paths: none.  charon's compiled-in pid file (/var/run/charon.pid) is in
a private tmpfs over /run (``unshare --mount``, lab/hostpaths.py); its
configuration (STRONGSWAN_CONF), swanctl directory (SWANCTL_DIR), vici
socket and log are in the instance's work directory.  charon logs at level
4 for IKE and CHILD_SA key derivation (the keys Wireshark needs): that log
also holds the pre-shared key, so it stays in the work directory and is
never copied into a run's reports (keylog.py takes the SA keys out of it).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import BenchError
from ...util.proc import in_ns, need

CHARON = "/usr/lib/ipsec/charon"
SWANCTL = "/usr/sbin/swanctl"
#: the plugins charon loads (Debian 12: libstrongswan, -standard-plugins for openssl/gcm, libcharon-extra-plugins
#: for kernel-libipsec); openssl brings AES-GCM, ECP, Curve25519 and 3DES
PLUGINS = ("random nonce openssl pem pkcs1 pkcs8 x509 pubkey revocation constraints hmac kdf gmp sha1 sha2 aes gcm "
           "socket-default vici updown")
SWANCTL_DIRS = ("conf.d", "x509", "x509ca", "x509aa", "x509ocsp", "x509crl", "x509ac", "pubkey", "private", "rsa",
                "ecdsa", "bliss", "pkcs8", "pkcs12")
#: the fwmark that keeps charon's own IKE (and libipsec's ESP-in-UDP) datagrams out of the routes kernel-libipsec
#: installs towards a host-to-host peer (strongswan.conf: kernel-libipsec.allow_peer_ts)
IKE_FWMARK = "0x4b45"
VICI_PATH_MAX = 100  # sun_path holds 108 bytes with the NUL; a little room below it


@dataclass
class Settings:
    """strongswan.conf's charon section, as a check or fault needs it."""
    kernel: str = "netlink"  # "netlink": the kernel's xfrm; "libipsec": user-space ESP (UDP-encapsulated)
    log: str = "charon.log"
    vici: str = "unix:///run/charon.vici"
    #: RFC 7296 §2.1 retransmissions: strongSwan waits timeout * base^n before the nth retransmission
    retransmit_timeout: float = 4.0
    retransmit_base: float = 1.8
    retransmit_tries: int = 5
    #: half-open IKE SAs above which charon answers IKE_SA_INIT with a COOKIE (0: always)
    cookie_threshold: int | None = None
    keys_in_log: bool = True
    extra: dict = field(default_factory=dict)  # more charon.* settings, dotted names

    def conf(self) -> str:
        # kernel-libipsec before kernel-netlink: the first loaded kernel interface takes the SAs
        plugins = PLUGINS + (" kernel-libipsec" if self.kernel == "libipsec" else "") + " kernel-netlink"
        lines = ["charon {", f"  load = {plugins}", "  filelog {", "    main {", f"      path = {self.log}",
                 "      time_format = %s", "      default = 1", "      flush_line = yes", "      append = yes"]
        if self.keys_in_log:
            lines += ["      ike = 4", "      chd = 4"]
        lines += ["      net = 2", "      enc = 2", "    }", "  }",
                  f"  retransmit_timeout = {self.retransmit_timeout:g}", f"  retransmit_base = {self.retransmit_base:g}",
                  f"  retransmit_tries = {self.retransmit_tries}", "  install_virtual_ip = no",
                  "  send_vendor_id = no", "  plugins {", "    vici {", f"      socket = {self.vici}", "    }"]
        if self.kernel == "libipsec":
            # host-to-host tunnels: the TUN route towards the peer must not carry charon's own datagrams
            lines += ["    kernel-libipsec {", "      allow_peer_ts = yes", "    }",
                      "    kernel-netlink {", f"      fwmark = !{IKE_FWMARK}", "    }",
                      "    socket-default {", f"      fwmark = {IKE_FWMARK}", "    }"]
        lines += ["  }"]
        if self.cookie_threshold is not None:
            lines += [f"  cookie_threshold = {self.cookie_threshold}", "  block_threshold = 100000"]
        lines += [f"  install_routes = {'yes' if self.kernel == 'libipsec' else 'no'}"]
        for k, v in sorted(self.extra.items()):
            lines.append(f"  {k} = {v}")
        lines += ["}", "swanctl {", "  load = pem pkcs1 pkcs8 x509 revocation constraints pubkey openssl random", "}",
                  ""]
        return "\n".join(lines)


@dataclass
class Connection:
    """One swanctl.conf connection with one CHILD_SA (the fields checks vary)."""
    name: str
    local_addrs: str
    remote_addrs: str
    proposals: list[str]
    esp_proposals: list[str]
    local_id: str
    remote_id: str = "%any"
    child: str = "host"
    mode: str = "transport"
    local_ts: str = "dynamic"
    remote_ts: str = "dynamic"
    auth: str = "psk"
    certs: list[str] = field(default_factory=list)  # file names in swanctl/x509 (auth = pubkey)
    start_action: str = "none"  # none | trap | start
    dpd_delay: int = 0
    rekey_time: str = "0"  # IKE SA: 0 never (a check rekeys when it means to)
    child_rekey_time: str = "0"
    encap: bool = False
    mobike: bool = False
    fragmentation: bool = False
    extra_child: dict = field(default_factory=dict)

    def conf(self) -> str:
        local = [f"auth = {'pubkey' if self.auth == 'pubkey' else 'psk'}", f"id = {self.local_id}"]
        if self.certs:
            local.append(f"certs = {','.join(self.certs)}")
        remote = [f"auth = {'pubkey' if self.auth == 'pubkey' else 'psk'}", f"id = {self.remote_id}"]
        child = [f"mode = {self.mode}", f"esp_proposals = {','.join(self.esp_proposals)}",
                 f"local_ts = {self.local_ts}", f"remote_ts = {self.remote_ts}", f"start_action = {self.start_action}",
                 f"rekey_time = {self.child_rekey_time}", "life_time = 0" if self.child_rekey_time == "0" else "",
                 *[f"{k} = {v}" for k, v in self.extra_child.items()]]
        body = ["version = 2", f"local_addrs = {self.local_addrs}", f"remote_addrs = {self.remote_addrs}",
                f"proposals = {','.join(self.proposals)}", f"rekey_time = {self.rekey_time}",
                f"dpd_delay = {self.dpd_delay}", f"encap = {'yes' if self.encap else 'no'}",
                f"mobike = {'yes' if self.mobike else 'no'}",
                f"fragmentation = {'yes' if self.fragmentation else 'no'}", "unique = never",
                "local {", *_indent(local), "}", "remote {", *_indent(remote), "}",
                "children {", f"  {self.child} {{", *_indent([c for c in child if c], 4), "  }", "}"]
        return "\n".join([f"{self.name} {{", *_indent(body), "}"])


def swanctl_conf(connections: list[Connection], secrets: dict[str, bytes] | None = None) -> str:
    """swanctl.conf with ``connections`` and IKE pre-shared keys (id -> secret, hex-encoded: any octets)."""
    out = ["connections {", *_indent("\n".join(c.conf() for c in connections).splitlines()), "}", "secrets {"]
    for n, (ident, psk) in enumerate((secrets or {}).items(), start=1):
        out += [f"  ike-{n} {{", f"    id = {ident}", f"    secret = 0x{psk.hex()}", "  }"]
    out += ["}", ""]
    return "\n".join(out)


def _indent(lines, n: int = 2) -> list[str]:
    return [" " * n + ln for ln in lines]


# -- what swanctl prints ------------------------------------------------------------------------------------------
def parse_raw(text: str) -> list[tuple[str, dict]]:
    """``swanctl ... --raw`` output: a list of (message name, nested dict); lists stay lists."""
    tokens = re.findall(r"\{|\}|\[[^\]]*\]|[^\s{}\[\]]+", text)
    out, i = [], 0

    def block(i: int) -> tuple[dict, int]:
        d: dict = {}
        while i < len(tokens) and tokens[i] != "}":
            tok = tokens[i]
            if "=" in tok:
                k, _, v = tok.partition("=")
                if v == "" and i + 1 < len(tokens) and tokens[i + 1].startswith("["):
                    d[k] = tokens[i + 1][1:-1].split()
                    i += 2
                    continue
                d[k] = v
                i += 1
            elif i + 1 < len(tokens) and tokens[i + 1] == "{":
                sub, i = block(i + 2)
                d[tok] = sub
                i += 1  # the closing brace
            else:
                i += 1
        return d, i

    while i < len(tokens):
        # "list-sa event {" / "list-sas reply {"
        j = i
        while j < len(tokens) and tokens[j] != "{":
            j += 1
        if j >= len(tokens):
            break
        name = " ".join(tokens[i:j])
        d, i = block(j + 1)
        out.append((name, d))
        i += 1
    return out


def ike_sas(raw_text: str) -> list[dict]:
    """The IKE SAs of ``swanctl --list-sas --raw`` (each with its ``name`` and ``child-sas``)."""
    sas = []
    for name, d in parse_raw(raw_text):
        if name == "list-sa event":
            for conn, sa in d.items():
                if isinstance(sa, dict):
                    sas.append({"name": conn, **sa})
    return sas


# -- one charon -----------------------------------------------------------------------------------------------------
class Charon:
    """charon and swanctl in namespace ``ns`` (None: this one), everything under ``workdir``."""

    def __init__(self, ns: str | None, workdir: Path, settings: Settings | None = None):
        self.ns = ns
        self.workdir = Path(workdir)
        self.settings = settings or Settings()
        self.settings.log = str(self.workdir / "charon.log")
        self._vici_dir: str | None = None
        self.proc: subprocess.Popen | None = None

    @property
    def vici_path(self) -> Path:
        """The vici socket: in the work directory, or in a short directory of its own when that path is longer
        than a unix socket's 107 bytes (charon then logs nothing and never listens)."""
        path = self.workdir / "charon.vici"
        if len(os.fsencode(str(path))) <= VICI_PATH_MAX:
            return path
        if self._vici_dir is None:
            self._vici_dir = tempfile.mkdtemp(prefix="v6gvici.")
        return Path(self._vici_dir) / "charon.vici"

    @property
    def swanctl_dir(self) -> Path:
        return self.workdir / "swanctl"

    @property
    def log(self) -> Path:
        return self.workdir / "charon.log"

    def _env(self) -> dict:
        return {**os.environ, "STRONGSWAN_CONF": str(self.workdir / "strongswan.conf"),
                "SWANCTL_DIR": str(self.swanctl_dir)}

    def start(self, timeout: float = 10.0) -> Charon:
        for prog in (CHARON, SWANCTL, "unshare"):
            need(prog)
        self.workdir.mkdir(parents=True, exist_ok=True)
        for d in SWANCTL_DIRS:
            (self.swanctl_dir / d).mkdir(parents=True, exist_ok=True)
        self.settings.vici = f"unix://{self.vici_path}"
        (self.workdir / "strongswan.conf").write_text(self.settings.conf())
        with contextlib.suppress(FileNotFoundError):
            self.vici_path.unlink()
        from ...util.hostpaths import PrivatePaths

        private = PrivatePaths(self.workdir / "private").tmpfs("/run").keep(self.workdir)
        argv = private.wrap([CHARON])
        logf = open(self.workdir / "charon.out", "ab")
        try:
            self.proc = subprocess.Popen(in_ns(self.ns, argv), stdout=logf, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=self._env(), start_new_session=True,
                                         cwd=self.workdir)
        finally:
            logf.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"charon exited at start ({self.proc.returncode}): {self._tail()}")
            if self.vici_path.exists():
                cp = self.swanctl("--stats", timeout=5, check=False)
                if cp.returncode == 0:
                    return self
            time.sleep(0.05)
        self.stop()
        raise BenchError(f"charon did not open its vici socket within {timeout:g} s: {self._tail()}")

    def _tail(self) -> str:
        for f in (self.workdir / "charon.out", self.log):
            with contextlib.suppress(OSError):
                text = f.read_text(errors="replace").strip().splitlines()
                if text:
                    return " | ".join(text[-3:])
        return "(no output)"

    def swanctl(self, *args: str, timeout: float = 20.0, check: bool = True) -> subprocess.CompletedProcess:
        argv = [SWANCTL, *args, "--uri", self.settings.vici]
        try:
            cp = subprocess.run(in_ns(self.ns, argv), capture_output=True, text=True, timeout=timeout, env=self._env())
        except subprocess.TimeoutExpired:
            raise BenchError(f"swanctl {' '.join(args)} did not finish in {timeout:g} s") from None
        if check and cp.returncode != 0:
            raise BenchError(f"swanctl {' '.join(args)} failed ({cp.returncode}): "
                             f"{(cp.stderr or cp.stdout).strip()[-300:]}")
        return cp

    def load(self, conf: str, files: dict[str, bytes] | None = None) -> None:
        """Write swanctl.conf (and credential ``files`` relative to the swanctl directory) and load it all."""
        (self.swanctl_dir / "swanctl.conf").write_text(conf)
        for rel, data in (files or {}).items():
            p = self.swanctl_dir / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            p.chmod(0o600)
        self.swanctl("--load-all", "--noprompt", "--clear")

    def initiate(self, child: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
        """``swanctl --initiate`` (returns when the CHILD_SA is up or failed; check the return code)."""
        return self.swanctl("--initiate", "--child", child, "--timeout", str(int(timeout)), timeout=timeout + 5,
                            check=False)

    def initiate_async(self, child: str, timeout: float = 30.0) -> subprocess.Popen:
        argv = [SWANCTL, "--initiate", "--child", child, "--timeout", str(int(timeout)), "--uri", self.settings.vici]
        return subprocess.Popen(in_ns(self.ns, argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=self._env())

    def list_sas(self) -> list[dict]:
        return ike_sas(self.swanctl("--list-sas", "--raw").stdout)

    def terminate_all(self) -> None:
        for sa in self.list_sas():
            self.swanctl("--terminate", "--ike-id", sa.get("uniqueid", "0"), "--force", "--timeout", "2",
                         timeout=10, check=False)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, 9)
                self.proc.wait(3)
        self.proc = None
        if self._vici_dir is not None:
            shutil.rmtree(self._vici_dir, ignore_errors=True)
            self._vici_dir = None

    def forget(self) -> None:
        """Stop charon and remove its work directory (the log holds the PSK)."""
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Charon:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

