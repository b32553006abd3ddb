"""lab/faults.py: the switch ports a fault shapes besides the DUT's (their qdiscs are deleted when the
fault is removed; the DUT's port goes with the DUT rebuild).  Pure logic."""

from v6gate.lab.faults import _other_switch_ports, get_fault

VALUES = {"dut_port": "dut-lan", "peer_port": "peer-lan"}


def test_the_both_ways_handicap_shapes_the_peer_port_too():
    assert _other_switch_ports(get_fault("dut_large_segments_slowed_both_ways"), VALUES) == ["peer-lan"]


def test_a_fault_on_the_dut_port_only_leaves_nothing_to_remove():
    assert _other_switch_ports(get_fault("dut_large_segments_slowed"), VALUES) == []


def test_every_length_bit_from_2048_up_is_matched_in_both_families():
    cmds = get_fault("dut_large_segments_slowed_both_ways").switch_tc
    for dev in ("{dut_port}", "{peer_port}"):
        for bit in (0x0800, 0x1000, 0x2000, 0x4000, 0x8000):
            assert any(f"dev {dev} " in c and "protocol ipv6" in c and f"u16 0x{bit:04x} 0x{bit:04x} at 4" in c
                       for c in cmds), (dev, bit)
            assert any(f"dev {dev} " in c and "protocol ip " in c and f"u16 0x{bit:04x} 0x{bit:04x} at 2" in c
                       for c in cmds), (dev, bit)
    # a 1500-byte frame's lengths (IPv6 payload 1460 = 0x05b4, IPv4 total 1500 = 0x05dc) set none of those bits
    assert all((n & 0xF800) == 0 for n in (1460, 1500)) and all((n & 0xF800) for n in (2048, 8240, 65535))
