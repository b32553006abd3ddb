"""Subprocess helpers: run commands (optionally inside a namespace) with
errors that say what failed, and find tools with an install hint."""

import shutil
import subprocess

from ..errors import BenchError, MissingTool

# tool -> Debian package that provides it (used in one-line install hints)
TOOL_PACKAGES = {
    "ip": "iproute2",
    "tc": "iproute2",
    "nft": "nftables",
    "sysctl": "procps",
    "radvd": "radvd",
    "dumpcap": "tshark",
    "tshark": "tshark",
    "editcap": "tshark",
    "kea-dhcp6": "kea-dhcp6-server",
    "iperf3": "iperf3",
    "ethtool": "ethtool",
    "kea-dhcp4": "kea-dhcp4-server",
    "tayga": "tayga",
    "unbound": "unbound",
    "dnsmasq": "dnsmasq-base",
    "dhcpcd": "dhcpcd-base",
    "dhclient": "isc-dhcp-client",
    "unshare": "util-linux",
}


def need(tool: str) -> str:
    path = shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin:/usr/bin:/bin")
    if not path:
        raise MissingTool(tool, TOOL_PACKAGES.get(tool, tool))
    return path


def in_ns(ns: str | None, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *argv] if ns else list(argv)


def run(argv, *, ns=None, check=True, input=None, timeout=30, what=None) -> subprocess.CompletedProcess:
    """Run a command; on failure raise BenchError quoting the command and its stderr."""
    need(argv[0])
    cmd = in_ns(ns, list(argv))
    try:
        cp = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{what or argv[0]} timed out after {timeout}s: {' '.join(cmd)}") from None
    if check and cp.returncode != 0:
        msg = (cp.stderr or cp.stdout).strip().splitlines()
        detail = msg[-1] if msg else f"exit {cp.returncode}"
        raise BenchError(f"{what or argv[0]} failed ({' '.join(cmd)}): {detail}")
    return cp


def ip_batch(commands: list[str], ns: str | None = None, what="ip -batch") -> None:
    """Run several iproute2 commands in one process (fast, stops at the first error)."""
    if not commands:
        return
    argv = ["ip"] + (["-n", ns] if ns else []) + ["-batch", "-"]
    run(argv, input="\n".join(commands) + "\n", what=what)
