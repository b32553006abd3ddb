"""The IPv6 offloads of the DUT's interface match its IPv4 ones (``ethtool
-k``): a comparison of facts, no traffic.  ``params.features`` lists the
(IPv4, IPv6) feature pairs."""

from __future__ import annotations

from ...core.context import NotApplicable
from ..registry import Workload, register_workload

GENERIC = {"tx-checksum-ipv4": "tx-checksum-ip-generic", "tx-checksum-ipv6": "tx-checksum-ip-generic"}


def parity_problems(feats: dict[str, str], pairs: list[list[str]]) -> tuple[list[str], list[str]]:
    """(problems, facts): an IPv4 offload on whose IPv6 twin is off."""

    def on(name: str) -> bool | None:
        if name not in feats:
            return None
        generic = GENERIC.get(name)
        return feats[name].startswith("on") or bool(generic and feats.get(generic, "").startswith("on"))

    problems, facts = [], []
    for v4, v6 in pairs:
        a, b = on(v4), on(v6)
        facts.append(f"{v4}={feats.get(v4, 'absent')}/{v6}={feats.get(v6, 'absent')}"
                     + (f" (generic {GENERIC[v6]}={feats.get(GENERIC[v6], 'absent')})" if v6 in GENERIC else ""))
        if a and b is False:
            problems.append(f"{v4} is on but {v6} is off ({feats.get(v6)})")
        elif a and b is None:
            problems.append(f"{v4} is on but the interface has no {v6}")
    return problems, facts


def judge(facts: dict, prof) -> tuple[list[str], list[str]]:
    """(problems, facts) of the DUT's ``ethtool -k`` (in the bench's facts); SKIP when it cannot be read."""
    feats = facts["dut"].get("ethtool_k")
    if not feats or "error" in feats:
        raise NotApplicable("the DUT's ethtool -k cannot be read by the harness"
                            + (f" ({feats['error']})" if feats and "error" in feats else ""))
    return parity_problems(feats, prof.params.get("features", []))


register_workload(Workload("ethtool_parity", compare=frozenset({"parity"}), metrics={},
                           params=frozenset({"features"}), judge=judge))
