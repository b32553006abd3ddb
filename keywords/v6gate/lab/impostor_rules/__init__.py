"""Impostor rules, one module per area; each function is registered with
``@rule(name)`` from ``v6gate.lab.impostor`` and returns the frames the
impostor sends in answer to one received frame (as the DUT)."""
