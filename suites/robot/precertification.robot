*** Settings ***
Documentation     Host pre-certification campaign: every host area of the USGv6-r1 / IPv6 Ready host checklist,
...               before paying for an accredited lab.
...
...               Scope:        every check part of the host areas (ipv6, nd, redirect, rd, slaac, pmtu, icmpv6, mld,
...                             addrarch, rdnss, dhcpv6, v6only and any host area added later), default profile.
...               Topology:     the embedded lab (tester, Linux DUT, router) or a real DUT from a target file.
...               Pass:         every part PASSes, does not apply (SKIP, with the reason) or FAILs where the target's
...                             waivers say so.  Anything else fails the campaign, with the verdict and the pcap.
...               Deliverables: results.json, junit.xml, report.html (triage), compliance.html / .csv / .json (the
...                             SDOC-style matrix to hand to the lab), MANIFEST.sha256 in the run directory.
...
...               robot --variable TARGET:fixtures/targets/my-dut.yaml suites/robot/precertification.robot
...               robot --variable AREAS:rdnss suites/robot/precertification.robot        (a small selection)
Library           v6gate.robot.V6Gate    areas=${AREAS}    profile=${PROFILE}
Suite Setup       Open V6Gate Session    target=${TARGET}    profile=${PROFILE}
Suite Teardown    Run Keywords    Write V6Gate Reports    AND    Close V6Gate Session

*** Variables ***
${TARGET}         lab
${AREAS}          all
${PROFILE}        default

*** Test Cases ***
Every Part Of Every Host Area Conforms
    [Documentation]    Generated: one test per check part, named by its IPv6 Ready ID and tagged by area.
    [Template]    Check Should Pass
    icmpv6.echo_request_is_answered    A
