"""Target-file values that reach a command line or a shell, validated by type
before anything runs; and the one way a command template is filled.

A target file may come from someone else (a pull request, a vendor's CI).
Its values end up in argv (``ip netns exec NS``, ``ssh HOST``, ``dumpcap -i
IF``, ``iscsi-ls iscsi://[A]``) and in the shell commands the DUT runs
(``control.ssh.commands``).  A host that begins with ``-`` is an option to
ssh (``-oProxyCommand=...`` runs a local command); an interface name with
``;`` or ``$(...)`` is a second command in the DUT's shell.  So each such
value is checked here by what it is (``FIELDS``): an interface name as an
interface name, a host as a host name or an address, a path as a path, a
namespace as a namespace name.  Every type refuses a leading ``-``, shell
metacharacters, whitespace, control characters and over-long values, so a
value is the same word quoted or not, in a bare or a quoted context of a
template.

Templates the user writes for the DUT get only values the run produced,
each quoted (``fill``), and may name only the placeholders of their action
(``TEMPLATE_FIELDS``): ``{dst.__class__}``, ``{0}``, ``{dst!r}`` or an
unknown ``{target}`` are refused when the file is loaded, not when the
check runs.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import BenchError, TargetFileError

#: the characters a value may hold: shlex's safe set, so quoting never changes it (bare or inside '...')
_SAFE = r"A-Za-z0-9_@%+=:,./-"
_WORD = re.compile(rf"^[A-Za-z0-9_][{_SAFE}]*$")
_RUN_VALUE = re.compile(rf"[A-Za-z0-9_@%+=:,./][{_SAFE}]{{0,1023}}")
_IFNAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$")
_NETNS = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
_LABEL = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
_PATH_CHARS = re.compile(r"^[A-Za-z0-9_./~+-][A-Za-z0-9_./~+@%=,:-]*$")
_SHARE = re.compile(r"^[A-Za-z0-9_$][A-Za-z0-9_.$-]{0,79}$")
_NAME_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.:_-]{3,222}$")  # iqn./eui./naa. (RFC 3720 §3.2.6) and nqn. names
_VERSION = re.compile(r"^[0-9](\.[0-9]){0,2}$")


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}...' ({len(str(value)):,} characters)"


class Bad(ValueError):
    """A value is not of its type: ``str(exc)`` is the fix."""


def _word(value, regex: re.Pattern, fix: str, max_len: int) -> str:
    if not isinstance(value, str):
        raise Bad(fix)
    if not value or len(value) > max_len or not regex.match(value):
        raise Bad(fix)
    return value


def ifname(value) -> str:
    """A Linux interface name on this machine (the tester's, a client's)."""
    return _word(value, _IFNAME, "an interface name: 1-15 letters, digits, '_', '.' or '-', not starting with '-' "
                                 "(see ip -br link)", 15)


def dut_ifname(value) -> str:
    """The DUT's name for its port, any OS (en0, vmx0, eth0.100, GigabitEthernet0/1)."""
    return _word(value, _WORD, "the DUT's interface name: 1-64 letters, digits and _ @ % + = : , . / -, not "
                               "starting with '-' (a name with spaces: use its index or alias)", 64)


def netns(value) -> str:
    """A network namespace name (a file under /run/netns)."""
    return _word(value, _NETNS, "a namespace name: 1-64 letters, digits, '_', '.' or '-', not starting with '-' "
                                "(see ip netns list)", 64)


def host(value) -> str:
    """A host name (RFC 1123 labels), an IPv6 address (with a %zone) or an IPv4 address."""
    fix = "a host name (letters, digits, '-', '.'), an IPv6 address or an IPv4 address, not starting with '-'"
    if not isinstance(value, str) or not value or len(value) > 253:
        raise Bad(fix)
    addr, _, zone = value.partition("%")
    try:
        ipaddress.ip_address(addr)
        if zone:
            dut_ifname(zone)
        return value
    except (ValueError, Bad):
        pass
    if zone or not all(_LABEL.match(label) for label in value.rstrip(".").split(".")):
        raise Bad(fix)
    return value


def user(value) -> str:
    return _word(value, _USER, "a user name: 1-64 letters, digits, '_', '.' or '-', not starting with '-'", 64)


def port(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise Bad("a port number, 1-65535")
    return value


def ipv6(value) -> str:
    if not isinstance(value, str):
        raise Bad("an IPv6 address such as 2001:db8:1::10")
    try:
        return str(ipaddress.IPv6Address(value))
    except ValueError:
        raise Bad("an IPv6 address such as 2001:db8:1::10") from None


def ipv4(value) -> str:
    if not isinstance(value, str):
        raise Bad("an IPv4 address such as 198.51.100.10")
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise Bad("an IPv4 address such as 198.51.100.10") from None


def ipv4_interface(value) -> str:
    if not isinstance(value, str):
        raise Bad("an IPv4 address with its prefix length, e.g. 198.51.100.10/24")
    try:
        ipaddress.IPv4Interface(value)
    except ValueError:
        raise Bad("an IPv4 address with its prefix length, e.g. 198.51.100.10/24") from None
    return value


def path(value) -> str:
    """A file path (absolute, relative, or ~): no whitespace, quotes or shell characters, not starting with '-'."""
    fix = "a path: letters, digits and _ . / ~ + - @ % = , :, not starting with '-', at most 4,096 characters"
    if not isinstance(value, str) or not value or len(value) > 4096 or not _PATH_CHARS.match(value):
        raise Bad(fix)
    return value


def absolute_path(value) -> str:
    """A path on the DUT or a server (an NFS export): absolute, no '..', URL- and shell-safe characters."""
    fix = "an absolute path such as /export/v6gate: letters, digits and _ . / + - @ % = , :, no '..'"
    if not isinstance(value, str) or not value.startswith("/") or ".." in value.split("/"):
        raise Bad(fix)
    path(value)
    return value


def smb_share(value) -> str:
    return _word(value, _SHARE, "an SMB share name: 1-80 letters, digits, '_', '.', '$' or '-', not starting with '-'",
                 80)


def storage_name(value) -> str:
    """An iSCSI or NVMe qualified name (iqn./eui./naa./nqn.: the schema checks the prefix)."""
    return _word(value, _NAME_ID, "a qualified name such as iqn.2026-11.com.example:lun0 (letters, digits "
                                  "and . : _ -)", 223)


def version(value) -> str:
    if not isinstance(value, str) or not _VERSION.match(value):
        raise Bad("a protocol version such as \"3\", \"4\" or \"4.1\"")
    return value


#: placeholders each command template may name; every one is filled with a value the run produced
TEMPLATE_FIELDS = {
    "reset": {"interface"},
    "addresses": {"interface"},
    "ping": {"dst", "size", "count", "interface"},
    "resolve": {"name", "family", "interface"},
    "connect": {"host", "port", "proto", "interface"},
    "listen": {"group", "interface"},
    "listen_filter": {"group", "mode", "sources", "interface"},  # sources: a list, each address its own word
    "unlisten": {"group", "interface"},
    "command": {"interface"},  # a command an area's setting supplies (extensions.dhcpv6.commands.release)
}
MAX_TEMPLATE = 4096


_TOKEN = re.compile(r"\{\{|\}\}|(?<!\$)\{([^{}\s]+)\}")


def template(action: str) -> Callable[[object], str]:
    allowed = TEMPLATE_FIELDS[action]
    names = ", ".join(f"{{{n}}}" for n in sorted(allowed))

    def check(value) -> str:
        if not isinstance(value, str) or not value.strip():
            raise Bad(f"a shell command run on the DUT; its placeholders: {names}")
        if len(value) > MAX_TEMPLATE:
            raise Bad(f"a command of at most {MAX_TEMPLATE:,} characters")
        for name in placeholders(value):
            if name not in allowed:
                raise Bad(f"{{{name}}} is not a placeholder of this command: use {names} (each is filled with a value "
                          f"the run produced, quoted); write {{{{{name}}}}} for those braces themselves")
        return value

    # (a template's field: its values are placeholders)
    check.action = action  # type: ignore[attr-defined]
    return check


def placeholders(text: str) -> Iterator[str]:
    """What a template names in braces: ``{word}`` with no space inside, not ``${VAR}`` (a shell variable) and
    not doubled (``{{``, ``}}``: the braces themselves).  ``{ cmd; }`` (a shell group) is not a placeholder;
    ``{dst.__class__}``, ``{0}``, ``{dst!r}`` and ``{print}`` are, and are refused (not one of the action's)."""
    for m in _TOKEN.finditer(text):
        if m.group(1) is not None:
            yield m.group(1)


def fill(text: str, action: str, **values) -> str:
    """A template filled with the run's values, each quoted for the shell (the template was checked on load);
    a list value (sources) becomes its items, each a quoted word."""
    allowed = TEMPLATE_FIELDS[action]

    def one(m: re.Match) -> str:
        name = m.group(1)
        if name is None:
            return m.group()[0]  # {{ or }}
        if name not in allowed or name not in values:
            raise BenchError(f"the {action} command names {{{name}}}, which this step does not fill")
        given = values[name]
        words = [str(v) for v in given] if isinstance(given, list | tuple) else [str(given)]
        for value in words:
            if not _RUN_VALUE.fullmatch(value):
                raise BenchError(f"refusing to put {_show(value)} into the DUT's {action} command: not a plain word "
                                 "(letters, digits and _ @ % + = : , . / -, not starting with '-')")
        return " ".join(shlex.quote(v) for v in words)

    return _TOKEN.sub(one, text)


# -- where they are -----------------------------------------------------------------------------------
#: dotted field (``[]``: each item of a list, ``*``: each value of a mapping) -> its type
FIELDS: dict[str, Callable[[object], object]] = {
    "tester.interface": ifname,
    "tester.netns": netns,
    "lab.tap_name": ifname,
    "control.netns": netns,
    "control.interface": dut_ifname,
    "control.ssh.host": host,
    "control.ssh.user": user,
    "control.ssh.port": port,
    "control.ssh.identity_file": path,
    **{f"control.ssh.commands.{a}": template(a) for a in TEMPLATE_FIELDS if a != "command"},
    "services[].port": port,
    "services[].address": ipv6,
    "services[].iqn": storage_name,
    "services[].nqn": storage_name,
    "services[].export": absolute_path,
    "services[].pseudo": absolute_path,
    "services[].referral": absolute_path,
    "services[].share": smb_share,
    "services[].versions[]": version,
    "perf.client.netns": netns,
    "perf.client.interface": ifname,
    "perf.dut.interface": dut_ifname,
    "perf.dut.ipv4": ipv4,
    "perf.dut.ipv6": ipv6,
    "perf.ports.*": port,
    "extensions.dhcpv6.commands.release": template("command"),
    "extensions.offload.interface": dut_ifname,
    "extensions.storage.client.netns": netns,
    "extensions.storage.client.interface": ifname,
    "extensions.storage.client.address": ipv6,
    "extensions.storage.low_mtu_path.client.netns": netns,
    "extensions.storage.low_mtu_path.client.interface": ifname,
    "extensions.storage.low_mtu_path.client.address": ipv6,
    "extensions.storage.services[].port": port,
    "extensions.storage.services[].address": ipv6,
    "extensions.storage.services[].iqn": storage_name,
    "extensions.storage.services[].nqn": storage_name,
    "extensions.storage.services[].export": absolute_path,
    "extensions.storage.services[].share": smb_share,
    "extensions.dns.resolver": ipv6,
    "extensions.v6only.ipv4": ipv4_interface,
    "extensions.plpmtud.datagram_client.netns": netns,
    "extensions.plpmtud.datagram_client.address": ipv6,
    "extensions.plpmtud.quic.port": port,
}


def _values(doc, parts: list[str], where: str) -> Iterator[tuple[str, object]]:
    if not parts:
        yield where, doc
        return
    head, rest = parts[0], parts[1:]
    key, many = (head[:-2], True) if head.endswith("[]") else (head, False)
    if key == "*":
        if isinstance(doc, dict):
            for k, v in doc.items():
                yield from _values(v, rest, f"{where}.{k}")
        return
    if not isinstance(doc, dict) or doc.get(key) is None:
        return
    here = f"{where}.{key}" if where else key
    if many:
        if isinstance(doc[key], list):
            for i, item in enumerate(doc[key]):
                yield from _values(item, rest, f"{here}[{i}]")
        return
    yield from _values(doc[key], rest, here)


def values(doc: dict) -> Iterator[tuple[str, str, object]]:
    """(field pattern, field as written, value) of every command-line value the document holds."""
    for pattern in FIELDS:
        for where, value in _values(doc, pattern.split("."), ""):
            yield pattern, where, value


def check(doc: dict, source) -> None:
    """Raise TargetFileError (one line: the file, the field, the value, the fix) for the first value that is
    not of its type."""
    for pattern, where, value in values(doc):
        try:
            FIELDS[pattern](value)
        except Bad as exc:
            raise TargetFileError(source, where, f"{_show(value)} is not valid", str(exc)) from None
    mac = str((doc.get("dut") or {}).get("mac", "discover")).lower()
    if mac != "discover" and (int(mac[:2], 16) & 1 or mac == "00:00:00:00:00:00"):
        what = "a group (multicast) address" if int(mac[:2], 16) & 1 else "all zero"
        raise TargetFileError(source, "dut.mac", f"{mac} is {what}: no DUT's port has it",
                              "give the MAC of the DUT's port on the link, or 'discover'")
    adapter = (doc.get("control") or {}).get("adapter")
    release = ((((doc.get("extensions") or {}).get("dhcpv6") or {}).get("commands")) or {}).get("release")
    if adapter == "netns" and release is not None:
        raise TargetFileError(source, "extensions.dhcpv6.commands.release", "a netns DUT runs on this machine, so "
                              "the command would run here as root", "leave it out: the lab releases its own lease")
    topo = (doc.get("lab") or {}).get("topology")
    if topo is not None:
        _topology(topo, source)


def _topology(value, source) -> None:
    """A lab target builds namespaces, sysctls and daemons as root from its topology: only the project's own
    topologies (fixtures/lab/) may be named."""
    from .paths import FIXTURES

    base = Path(str(source)).parent if source else Path.cwd()
    try:
        resolved = (base / str(value)).resolve()
        inside = resolved.is_relative_to((FIXTURES / "lab").resolve())
    except (OSError, ValueError):
        inside = False
    if not isinstance(value, str) or not inside:
        raise TargetFileError(source, "lab.topology", f"{_show(value)} is not a topology of this project",
                              "name a file under fixtures/lab/ (a topology runs commands as root on this machine)")
