"""Performance gates — IPv6 vs IPv4 (and offload on/off, with/without an
extension header) with paired interleaved trials and confidence intervals;
control-plane times against stated targets.

Topology: the lab's peer node (a kernel stack, dual-stacked for the gates
only) runs the clients; the DUT runs with its 'perf' configuration
(dual-stacked, iperf3 / qperf / v6gate-loadgen servers).  Runs serially in
`v6gate run`'s gates phase.  Declarations: keywords/v6gate/checks/perf.py;
workloads, margins and budgets: fixtures/gates/profiles.yaml
(`v6gate list --area perf`).
"""

from v6gate.pytest_plugin import check_test

test_perf = check_test("perf", kind="gate")
