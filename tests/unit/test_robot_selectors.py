"""The Robot library's selectors (no lab): an area, an area that may not exist
yet (``storage?``), every part citing an RFC (``rfc:3646``), a check id, and
gates; unknown selectors are reported, not silently dropped."""

from v6gate.robot.library import V6Gate


def keys(lib: V6Gate) -> tuple[set[str], list[str]]:
    items, unknown = lib._select()
    return {f"{c.id}#{p.letter}" if p.letter else c.id for c, p in items}, unknown


def test_selectors():
    got, unknown = keys(V6Gate(areas="rfc:3646,storage?,addrarch"))
    assert not unknown
    from v6gate.core.check import REGISTRY

    areas = {k.split(".")[0] for k in got}
    if "storage" not in {c.area for c in REGISTRY.values()}:
        assert "storage" not in areas, "storage? is left out while there is no such area"
    assert {"dhcpv6", "addrarch"} <= areas <= {"dhcpv6", "addrarch", "v6only", "storage"}
    addrarch = [c for c in REGISTRY.values() if c.area == "addrarch" and c.kind == "check"]
    assert any(k.startswith("dhcpv6.") for k in got)
    assert len([k for k in got if k.startswith("addrarch.")]) == sum(len(c.parts) for c in addrarch)
    got, unknown = keys(V6Gate(areas="nosuch,rfc:99999", gates="perf.ns_to_na_latency_within_target"))
    assert unknown == ["nosuch", "rfc:99999"] and got == {"perf.ns_to_na_latency_within_target"}
    got, _ = keys(V6Gate(areas="pmtu.packet_too_big_not_matching_sent_traffic_is_ignored"))
    assert got == {"pmtu.packet_too_big_not_matching_sent_traffic_is_ignored"}
