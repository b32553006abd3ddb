"""A DUT that performs no Duplicate Address Detection at all is one root
cause: the lab's DUT with DAD off from its start (fault ``dut_skips_dad``)
gives one FAIL, v6LC.3.1.1 (it restarts the DUT and watches its link-local
address), and the parts that need a DAD probe to judge (the DAD-validation
tests v6LC.3.1.2-3.1.5, v6LC.3.2.1, the duplicate link-local address) are
NOT_JUDGED ``dad`` judged by it; the other SLAAC parts find the addresses
the DUT uses without probing them and are judged on their own clauses.
A DUT that performs DAD but skips it for new addresses (``dut_skips_dad_on
_new_addresses``) still FAILs those parts: the controls prove that."""

from __future__ import annotations

import collections

from v6gate.core.check import all_items
from v6gate.core.session import Session

DAD_JUDGE = "slaac.link_local_address_is_probed_before_use#"
#: the checks whose parts need the DUT's DAD probe to judge anything
DAD_DEPENDENT = {"slaac.dad_messages_for_the_tentative_address", "slaac.dad_ns_validation",
                 "slaac.dad_na_validation", "slaac.resolution_ns_for_tentative_address_is_ignored",
                 "slaac.global_address_is_formed_and_probed", "slaac.duplicate_hardware_link_local_disables_ip"}


def test_a_dut_that_performs_no_dad_is_one_fail_and_the_dad_parts_are_not_judged(tmp_path):
    results, deviations = {}, set()
    with Session.for_lab(tmp_path) as session:
        for c, p in all_items(areas=["slaac"]):
            r = session.run(c, p, fault="dut_skips_dad", setup="dad-off")
            results[r.key] = r
            if session.target.waiver_for(c.id, p.letter) is not None:
                deviations.add(r.key)  # the lab's Linux deviates here (fixtures/deviations/linux): its own FAIL
    by = collections.defaultdict(list)
    for k, r in results.items():
        by[r.verdict].append(k)
    print({v: len(ks) for v, ks in by.items()})
    fails = {k: r.reason[:300] for k, r in results.items() if r.verdict == "FAIL" and k not in deviations}
    assert set(fails) == {"slaac.link_local_address_is_probed_before_use"}, fails
    assert "no DAD Neighbor Solicitation" in fails["slaac.link_local_address_is_probed_before_use"]
    dependent = {k: r for k, r in results.items() if r.id in DAD_DEPENDENT}
    assert len(dependent) >= 25, sorted(dependent)
    for k, r in dependent.items():
        assert r.verdict == "NOT_JUDGED", (k, r.verdict, r.reason[:300])
        assert r.precondition["name"] == "dad" and r.precondition["judged_by"] == DAD_JUDGE, (k, r.precondition)
    others = {k: r for k, r in results.items() if r.id not in DAD_DEPENDENT and k not in fails and k not in deviations}
    wrong = {k: (r.verdict, r.reason[:300]) for k, r in others.items() if r.verdict not in ("PASS", "SKIP")}
    assert not wrong, wrong
    print(f"DAD off: 1 FAIL ({DAD_JUDGE.rstrip('#')}), {len(dependent)} NOT_JUDGED dad, "
          f"{sum(r.verdict == 'PASS' for r in others.values())} PASS on their own clauses")
