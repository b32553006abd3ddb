"""On-link determination and the Prefix List (RFC 4861 §5.2, §6.3.4)."""



from ...core.check import Part, check
from ...core.context import CheckContext
from ...scenario.firsthop import FirstHop


def _direct(bench: FirstHop, answer, node, src: str) -> tuple[list[str], str]:
    """The DUT resolved ``src`` itself and answered ``node`` directly."""
    seen = answer.describe(bench.names)
    problems = []
    if answer.reply is None:
        problems.append(f"no Echo Reply to {src}")
    elif answer.mac != node.mac.lower():
        problems.append(f"the Echo Reply to {src} went to {bench.names.get(answer.mac, answer.mac)}, not directly to "
                        f"{node.name} ({node.mac}): {src} was not taken as on-link")
    if not answer.solicited(src):
        problems.append(f"no Neighbor Solicitation for {src}: it was not resolved as an on-link neighbour")
    return problems, seen


def _via_router(bench: FirstHop, answer, src: str) -> tuple[list[str], str]:
    """The DUT answered ``src`` through TR1, without soliciting it."""
    seen = answer.describe(bench.names)
    problems = []
    if answer.reply is None:
        problems.append(f"no Echo Reply to {src} (it should go through TR1, the default router)")
    elif answer.mac != bench.tr1.mac.lower():
        problems.append(f"the Echo Reply to {src} went to {bench.names.get(answer.mac, answer.mac)}, not through TR1")
    if answer.solicited(src):
        problems.append(f"the DUT solicited {src}: it took an off-link address as on-link")
    return problems, seen


@check(
    area="nd",
    ipv6ready="v6LC.2.1.1",
    title="On-link Determination",
    rfc="RFC 4861 §5.2, §6.3.4",
    needs=["exclusive_router"],
    liveness="ns",
    expect="next-hop determination follows the Prefix List: on-link correspondents are resolved and answered directly, "
           "others through the default router",
    parts=[
        Part("A", "Link-local Address", where="link_local", fault="dut_routes_link_local_via_router",
             expect="an Echo Request from TN1's link-local address is answered directly: the DUT solicits TN1's "
                    "link-local address and replies to TN1's MAC (link-local addresses are always on-link)"),
        Part("B", "Global Address, On-link Prefix covers TN1", where="on_link", fault="dut_ignores_on_link_flag",
             expect="an Echo Request from TN1's global address in the advertised on-link prefix is answered "
                    "directly: the DUT solicits that address and replies to TN1's MAC"),
        Part("C", "Global Address, On-link Prefix does not cover TN2", where="off_link",
             fault="dut_assumes_all_destinations_on_link",
             expect="an Echo Request from TN2's address outside every on-link prefix is answered through TR1, the "
                    "default router, even though TN2 sent it directly: no NS for TN2's address"),
    ],
)
def next_hop_follows_prefix_list(t: CheckContext):
    """'Next-hop determination for a given unicast destination operates as
    follows.  The sender performs a longest prefix match against the Prefix
    List to determine whether the packet's destination is on- or off-link.
    If the destination is on-link, the next-hop address is the same as the
    packet's destination address.  Otherwise, the sender selects a router
    from the Default Router List' (RFC 4861 §5.2); the link-local prefix is
    always on-link (§5.1)."""
    bench = FirstHop(t).start()
    if t.p.where == "link_local":
        node = bench.name(t.tn1)
        answer = bench.ask(node.link_local, via=node, dst=t.dut.link_local)
        problems, seen = _direct(bench, answer, node, node.link_local)
    elif t.p.where == "on_link":
        node = bench.name(t.tn1)
        answer = bench.ask(node.global_addr, via=node)
        problems, seen = _direct(bench, answer, node, node.global_addr)
    else:
        node = bench.offlink_node("TN2")
        answer = bench.ask(node.offlink, via=node)
        problems, seen = _via_router(bench, answer, node.offlink)
    return t.conclude(seen, problems)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.3",
    title="Prefix Information Option Processing, On-link Flag (Hosts Only)",
    rfc="RFC 4861 §6.3.4, §4.6.2",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    fault="dut_takes_every_prefix_as_on_link",
    expect="a prefix advertised with the on-link flag clear does not make its addresses on-link: an Echo Request from "
           "TN1's address in that prefix is answered through TR1, with no NS for TN1's address",
)
def prefix_without_on_link_flag_is_not_on_link(t: CheckContext):
    """'If the prefix is the link-local prefix, silently ignore the Prefix
    Information option.  If the on-link flag is set ... add the prefix to
    the Prefix List' (RFC 4861 §6.3.4); L=0 means 'the advertisement makes
    no statement about on-link or off-link properties of the prefix' (§4.6.2),
    so it must not be added and TN1 stays off-link."""
    bench = FirstHop(t, on_link=False).start()
    node = bench.name(t.tn1)
    answer = bench.ask(node.global_addr, via=node)
    problems, seen = _via_router(bench, answer, node.global_addr)
    return t.conclude(seen, problems)


@check(
    area="nd",
    ipv6ready="v6LC.2.1.4",
    title="Host Prefix List (Hosts Only)",
    rfc="RFC 4861 §6.3.4",
    scope="host",
    needs=["exclusive_router"],
    liveness="echo",
    expect="the on-link prefix stays in the Prefix List for its Valid Lifetime, as last advertised",
    parts=[
        Part("A", "Prefix Lifetime has not Expired", refresh=False, fault="dut_ignores_on_link_flag",
             expect="before its Valid Lifetime ends, the prefix is on-link: an Echo Request from TN1's address in it "
                    "is answered directly after an NS for that address"),
        Part("B", "Prefix Lifetime updated by Router Advertisement", refresh=True,
             fault="dut_ignores_later_router_advertisements",
             expect="a second RA resets the prefix's invalidation timer: past the first lifetime TN1 is still on-link "
                    "(answered directly), past the renewed one it is off-link (answered through TR1)"),
    ],
)
def prefix_list_follows_valid_lifetime(t: CheckContext):
    """'If the prefix is already present in the host's Prefix List as the
    result of a previously received advertisement, reset its invalidation
    timer to the Valid Lifetime value in the Prefix Information option'; a
    prefix whose invalidation timer expires is removed (RFC 4861 §6.3.4,
    §5.3).  Lifetimes are short (whole seconds, a few reply timeouts) so the
    check waits them out."""
    valid = max(3, int(3 * t.reply_timeout + 0.999))
    bench = FirstHop(t, valid=valid, preferred=valid, autonomous=0).start()
    node = bench.name(t.tn1)
    t0 = bench.started
    seen_all = []
    if t.p.refresh:
        t.wait(max(0.0, t0 + valid / 2 - t.now()))
        t.send(bench.ra(), label=f"RA from TR1 renewing the prefix: valid lifetime {valid} s")
        checks = [(t0 + valid + 0.5, True), (t0 + valid * 1.5 + 1.0, False)]
    else:
        checks = [(t0 + valid * 0.6, True)]
    problems = []
    for when, on_link in checks:
        t.wait(max(0.0, when - t.now()))
        answer = bench.ask(node.global_addr, via=node, dst=t.dut.link_local)
        more, seen = (_direct(bench, answer, node, node.global_addr) if on_link
                      else _via_router(bench, answer, node.global_addr))
        seen_all.append(f"at +{answer.since - t0:.1f} s: {seen}")
        problems += [f"at +{answer.since - t0:.1f} s: {p}" for p in more]
    text = f"prefix {bench.prefix} valid {valid} s; " + "; ".join(seen_all)
    return t.conclude(text, problems)
