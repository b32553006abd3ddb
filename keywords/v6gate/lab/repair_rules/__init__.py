"""Repair rules, one module per area; each function is registered with
``@repair(name)`` from ``v6gate.lab.repair`` and turns one received IPv6
packet (bytes) into what the DUT's kernel gets instead (see lab/repair.py)."""
