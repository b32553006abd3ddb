"""The device under test, as data.

A target file (YAML) says what the DUT is, which capabilities it claims, how
the tester reaches it and how (or whether) it can be controlled.  The
embedded lab produces the same ``Target`` object from
``fixtures/targets/lab.yaml`` plus the namespaces it built.

Loading never returns a half-valid target: the first problem is reported as
one line naming the file, the field and the fix (``TargetFileError``).
"""

from __future__ import annotations

import datetime as dt
import glob
import ipaddress
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from .. import target_values, untrusted
from ..errors import InputFileError, TargetFileError
from ..paths import FIXTURES

SCHEMA_PATH = FIXTURES / "targets" / "target.schema.json"

DEFAULT_TIMING = {
    "reply_timeout_s": 2.0,
    "silence_s": 2.0,
    "ready_timeout_s": 30.0,
    "retrans_timer_s": 1.0,  # RFC 4861 §10 RETRANS_TIMER
    "address_room_wait_s": 900.0,  # the longest wait for room in a bounded address table (dut.max_addresses)
    "adaptive": True,  # reply and silence windows from the DUT's measured answers, within these (core/pace.py)
    "dut_return_s": 20.0,  # how long a DUT that stopped answering mid-run is given to come back (core/liveness.py)
}


@dataclass(frozen=True)
class Waiver:
    check: str
    part: str | None
    reason: str
    rfc: str | None = None
    observed: str | None = None
    corrective_fault: str | None = None
    source: str | None = None
    expires: str | None = None  # ISO date; from that day on the waiver no longer waives (it is reported)
    parts: str | None = None  # "all": a part-less waiver of a multi-part check, said on purpose

    def covers(self, check_id: str, part: str | None) -> bool:
        return self.check == check_id and (self.part is None or self.part == part)

    @property
    def expired(self) -> bool:
        return bool(self.expires) and str(self.expires) <= dt.datetime.now(dt.UTC).date().isoformat()

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class Target:
    name: str
    kind: str
    capabilities: frozenset[str]
    tester_interface: str
    tester_netns: str | None
    dut_mac: str
    dut_link_local: str  # an address, "eui64" or "discover"
    dut_global: list[str]
    dut_iid: str | None
    link_prefix: ipaddress.IPv6Network
    link_mtu: int
    other_routers: bool
    control: dict
    timing: dict
    waivers: list[Waiver]
    services: list[dict] = field(default_factory=list)
    perf: dict = field(default_factory=dict)
    extensions: dict = field(default_factory=dict)
    lab: dict | None = None
    source: str | None = None
    description: str = ""
    dut_max_addresses: int | None = None  # the DUT's address table size, link-local included (None: unbounded)

    def waiver_for(self, check_id: str, part: str | None) -> Waiver | None:
        """The waiver in force for a part (an expired one no longer waives)."""
        for w in self.waivers:
            if w.covers(check_id, part) and not w.expired:
                return w
        return None

    def expired_waiver_for(self, check_id: str, part: str | None) -> Waiver | None:
        """An expired waiver that would have covered the part (reported, not applied)."""
        if self.waiver_for(check_id, part):
            return None
        return next((w for w in self.waivers if w.covers(check_id, part) and w.expired), None)

    def expired_waivers(self) -> list[Waiver]:
        return [w for w in self.waivers if w.expired]

    def claims(self, capability: str) -> bool:
        return capability in self.capabilities

    @property
    def is_lab(self) -> bool:
        return self.lab is not None

    @property
    def external(self) -> bool:
        """A DUT the run does not rebuild before each check: a device, or one
        on the lab's TAP."""
        return not self.is_lab or bool((self.lab or {}).get("external_dut"))

    def summary(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "capabilities": sorted(self.capabilities),
            "source": self.source,
            "control": self.control.get("adapter"),
            "dut_mac": self.dut_mac,
            "link_prefix": str(self.link_prefix),
            "lab": bool(self.lab),
            **({"lab_fault": self.lab["fault"]} if (self.lab or {}).get("fault") else {}),
        }


def _schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def _field_path(error: jsonschema.ValidationError) -> str:
    parts = []
    for p in error.absolute_path:
        parts.append(f"[{p}]" if isinstance(p, int) else (("." if parts else "") + str(p)))
    return "".join(parts) or "(top level)"


def _fix_for(error: jsonschema.ValidationError, schema: dict) -> str:
    """Find the most specific 'x-fix' hint along the failing schema path."""
    node = error.schema
    if error.validator == "additionalProperties" and isinstance(node, dict) and "properties" in node:
        return f"the fields allowed here are: {', '.join(node['properties'])}"
    if error.validator == "required" and isinstance(node, dict):
        missing = re.findall(r"'([^']+)' is a required property", error.message)
        sub = node.get("properties", {}).get(missing[0], {}) if missing else {}
        if isinstance(sub, dict) and "$ref" in sub:
            sub = schema["$defs"].get(sub["$ref"].split("/")[-1], {})
        if isinstance(sub, dict) and "x-fix" in sub:
            return f"add it: {sub['x-fix']}"
    if isinstance(node, dict) and "x-fix" in node:
        return node["x-fix"]
    # walk the schema path from the deepest node up
    resolver_root = schema
    nodes = [resolver_root]
    cur = resolver_root
    for key in error.absolute_schema_path:
        try:
            cur = cur[key]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(cur, dict) and "$ref" in cur:
            ref = cur["$ref"].split("/")[-1]
            cur = schema["$defs"].get(ref, cur)
        nodes.append(cur)
    for n in reversed(nodes):
        if isinstance(n, dict) and "x-fix" in n:
            return n["x-fix"]
    return "see fixtures/targets/example-host.yaml for the expected format"


def _problem(error: jsonschema.ValidationError) -> str:
    v = error.validator
    if v == "required":
        missing = re.findall(r"'([^']+)' is a required property", error.message)
        return f"missing required field '{missing[0] if missing else error.message}'"
    if v == "additionalProperties":
        extra = re.findall(r"'([^']+)'", error.message)
        return f"unknown field '{extra[0] if extra else '?'}'"
    if v == "enum":
        return f"{error.instance!r} is not allowed"
    if v == "type":
        return f"{error.instance!r} has the wrong type (expected {error.validator_value})"
    if v in ("pattern", "format"):
        return f"{error.instance!r} is not valid"
    return error.message


def _load_yaml(path: Path, kind: str = "target file") -> object:
    """Through the one untrusted loader (size, depth, nodes with aliases expanded, duplicate keys, text)."""
    try:
        return untrusted.load_yaml(path, untrusted.CONFIG.but(kind=kind))
    except InputFileError as exc:
        raise TargetFileError(exc.path, exc.field, exc.problem, exc.fix) from None


def _plain(value):
    """YAML turns 2027-06-30 into a date; the schema speaks strings."""
    import datetime

    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def validate_document(doc: object, path: Path) -> dict:
    doc = _plain(doc)
    if not isinstance(doc, dict):
        raise TargetFileError(path, None, "is not a YAML mapping", "start from fixtures/targets/example-host.yaml")
    schema = _schema()
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(doc), key=lambda e: (len(list(e.absolute_path)), str(list(e.absolute_path))))
    if errors:
        # prefer the deepest error of the first failing branch (anyOf gives nested context)
        err = errors[0]
        if err.context:
            err = sorted(err.context, key=lambda e: -len(list(e.absolute_path)))[0]
        raise TargetFileError(path, _field_path(err), _problem(err), _fix_for(err, schema))
    return doc


def _load_waivers(doc: dict, path: Path) -> list[Waiver]:
    items = [(w, str(path)) for w in doc.get("waivers", [])]
    for pattern in doc.get("waiver_files", []):
        matches = sorted(glob.glob(str(path.parent / pattern)))
        if not matches and not any(ch in pattern for ch in "*?["):
            raise TargetFileError(path, "waiver_files", f"{pattern!r} not found", "point at an existing YAML file")
        for m in matches:
            sub = _load_yaml(Path(m), "waiver file") or {}
            if not isinstance(sub, dict) or not isinstance(sub.get("waivers", []), list):
                raise TargetFileError(m, "waivers", "is not a list", "write 'waivers:' followed by a list")
            schema = _schema()
            wv = jsonschema.Draft202012Validator({"$defs": schema["$defs"], **schema["$defs"]["waiver"]},
                                                 format_checker=jsonschema.FormatChecker())
            for i, w in enumerate(_plain(sub.get("waivers", []))):
                errs = list(wv.iter_errors(w))
                if errs:
                    e = errs[0]
                    raise TargetFileError(m, f"waivers[{i}].{'.'.join(map(str, e.absolute_path)) or ''}".rstrip("."),
                                          _problem(e), _fix_for(e, schema))
                items.append((w, m))
    out = []
    for w, src in items:
        out.append(Waiver(check=w["check"], part=w.get("part"), reason=w["reason"], rfc=w.get("rfc"),
                          observed=w.get("observed"), corrective_fault=w.get("corrective_fault"), source=src,
                          expires=str(w["expires"]) if w.get("expires") else None, parts=w.get("parts")))
    _refuse_partless(out)
    return out


def _refuse_partless(waivers: list[Waiver]) -> None:
    """A waiver without ``part`` on a check with several parts waives all of
    them: refuse it unless it says ``parts: all``."""
    from .check import load_all

    registry = load_all()
    for w in waivers:
        c = registry.get(w.check)
        if w.part is None and w.parts != "all" and c is not None and len(c.parts) > 1:
            letters = ", ".join(str(p.letter) for p in c.parts)
            raise TargetFileError(w.source, f"waiver for {w.check}",
                                  f"has no 'part' but the check has {len(c.parts)} parts ({letters})",
                                  "name the part ('part: A') or write 'parts: all' to waive every part")


def _mac_ok(mac: str) -> str:
    return mac.lower()


#: area settings checked whenever a target is loaded (``v6gate validate``, ``run``): extensions key ->
#: "module:function" called with (path, value), raising TargetFileError (the area's own module)
EXTENSION_CHECKS = {"ipsec": "v6gate.ipsec.settings:validate_extension",
                    "plpmtud": "v6gate.scenario.dplpmtud:validate_extension"}


def _check_extensions(path: Path, extensions: dict) -> None:
    import importlib

    for key, ref in EXTENSION_CHECKS.items():
        if key in extensions:
            module, func = ref.split(":")
            getattr(importlib.import_module(module), func)(path, extensions[key])


def load_target(path: str | Path, overrides: dict | None = None) -> Target:
    """Load and validate a target file; raise TargetFileError (one line) on any problem."""
    path = Path(path)
    doc = _load_yaml(path)
    if overrides:
        doc = _merge(doc if isinstance(doc, dict) else {}, overrides)
    doc = validate_document(doc, path)
    target_values.check(doc, path)  # every value that reaches a command line, by its type

    link = doc.get("link", {})
    try:
        prefix = ipaddress.IPv6Network(link.get("prefix", "2001:db8:1::/64"), strict=True)
    except ValueError:
        raise TargetFileError(path, "link.prefix", f"{link.get('prefix')!r} has host bits set",
                              "write the network address, e.g. 2001:db8:1::/64") from None
    dut = doc["dut"]
    for i, g in enumerate(dut.get("global", [])):
        a = ipaddress.IPv6Address(g)
        if a.is_link_local or a.is_multicast:
            raise TargetFileError(path, f"dut.global[{i}]", f"{g} is not a global unicast address",
                                  "list only global unicast addresses here")
    ll = dut.get("link_local", "eui64")
    if ll not in ("eui64", "discover") and not ipaddress.IPv6Address(ll).is_link_local:
        raise TargetFileError(path, "dut.link_local", f"{ll} is not an fe80::/10 address",
                              "give the DUT's link-local address, 'eui64' or 'discover'")
    control = dict(doc["control"])
    if control["adapter"] == "ssh" and "ssh" not in control:
        raise TargetFileError(path, "control.ssh", "missing for adapter ssh", "add control.ssh.host (and commands)")
    if control["adapter"] == "netns" and "lab" not in doc and "netns" not in control:
        raise TargetFileError(path, "control.netns", "missing for adapter netns",
                              "name the DUT's namespace, or use the lab target")
    if doc.get("lab", {}).get("external_dut") and control["adapter"] == "netns":
        raise TargetFileError(path, "control.adapter", "an external (TAP) DUT cannot be controlled by the lab",
                              "use control.adapter: none, ssh or manual")
    _check_extensions(path, dict(doc.get("extensions", {})))
    _check_lab_fault(doc, path)
    timing = {**DEFAULT_TIMING, **doc.get("timing", {})}
    return Target(
        name=doc["name"],
        kind=doc["kind"],
        capabilities=frozenset(doc["capabilities"]),
        tester_interface=doc["tester"]["interface"],
        tester_netns=doc["tester"].get("netns"),
        dut_mac=_mac_ok(dut["mac"]),
        dut_link_local=ll,
        dut_global=list(dut.get("global", [])),
        dut_iid=dut.get("iid"),
        link_prefix=prefix,
        link_mtu=int(link.get("mtu", 1500)),
        other_routers=bool(link.get("other_routers", False)),
        control=control,
        timing=timing,
        waivers=_load_waivers(doc, path),
        services=list(doc.get("services", [])),
        perf=dict(doc.get("perf", {})),
        extensions=dict(doc.get("extensions", {})),
        lab=doc.get("lab"),
        source=str(path),
        description=doc.get("description", ""),
        dut_max_addresses=dut.get("max_addresses"),
    )


def _check_lab_fault(doc: dict, path: Path) -> None:
    """``lab.fault``: a lab fault that exists, on a DUT the lab builds (it cannot fault a TAP DUT)."""
    name = (doc.get("lab") or {}).get("fault")
    if name is None:
        return
    if doc["lab"].get("external_dut"):
        raise TargetFileError(path, "lab.fault", "the lab cannot apply a fault to an external (TAP) DUT",
                              "leave lab.fault out, or use the lab's own DUT")
    from ..lab.faults import load_faults

    if name not in load_faults():
        raise TargetFileError(path, "lab.fault", f"{name!r} is not a lab fault",
                              "name a fault defined in fixtures/faults/*.yaml")


def absolute_file_refs(doc: Any, base: Path) -> Any:
    """``doc`` (a target document or part of one) with each ``{file: PATH}`` reference (a key, a PSK) whose
    PATH is relative made absolute against ``base``, the directory of the file it was written in: a document
    written somewhere else (a campaign's DUT directory, ``lab up``'s run state) still names the same file."""
    if isinstance(doc, dict):
        if set(doc) == {"file"} and isinstance(doc["file"], str) and doc["file"] \
                and not Path(doc["file"]).is_absolute():
            return {"file": str((base / doc["file"]).resolve())}
        return {k: absolute_file_refs(v, base) for k, v in doc.items()}
    if isinstance(doc, list):
        return [absolute_file_refs(v, base) for v in doc]
    return doc


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out
