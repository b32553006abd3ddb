*** Settings ***
Documentation     Host pre-certification, first slice: ICMPv6 Echo (v6LC.5.1.2), Neighbor
...               Solicitation processing (v6LC.2.1.7, v6LC.2.1.8), SLAAC with DAD (v6LC.3.1.1,
...               v6LC.3.2.1 A).  Runs against the embedded lab unless TARGET is given:
...               robot --variable TARGET:fixtures/targets/my-dut.yaml suites/robot/host_slice.robot
...               Each keyword calls the v6gate library; the checks' logic is in keywords/v6gate/checks/.
Library           v6gate.robot.V6Gate
Suite Setup       Open V6Gate Session    target=${TARGET}
Suite Teardown    Run Keywords    Write V6Gate Reports    AND    Close V6Gate Session

*** Variables ***
${TARGET}         lab

*** Test Cases ***
Echo Request To The Link-Local Address Is Answered
    [Documentation]    v6LC.5.1.2 part A — RFC 4443 §4.2
    Check Should Pass    icmpv6.echo_request_is_answered    A

Echo Request To A Global Address Is Answered
    [Documentation]    v6LC.5.1.2 part B — RFC 4443 §4.2
    Check Should Pass    icmpv6.echo_request_is_answered    B

Echo Request To All-Nodes Is Answered From A Unicast Address
    [Documentation]    v6LC.5.1.2 part C — RFC 4443 §4.2
    Check Should Pass    icmpv6.echo_request_is_answered    C

Echo Request To The Unspecified Address Gets No Reply
    [Documentation]    v6LC.5.1.2 part E — RFC 4291 §2.5.2, RFC 4443 §4.2
    Check Should Pass    icmpv6.echo_request_is_answered    E

Neighbor Solicitation Without A Cache Entry Is Answered
    [Documentation]    v6LC.2.1.8 parts A-C — RFC 4861 §7.2.3, §7.2.4
    Check Should Pass    nd.ns_is_answered_without_nce    A
    Check Should Pass    nd.ns_is_answered_without_nce    B
    Check Should Pass    nd.ns_is_answered_without_nce    C

Neighbor Solicitation For The Global Address Is Answered
    [Documentation]    RFC 4861 §7.2.3, §7.2.4
    Check Should Pass    nd.ns_for_global_address_is_answered    unicast
    Check Should Pass    nd.ns_for_global_address_is_answered    multicast

Invalid Neighbor Solicitations Are Ignored
    [Documentation]    v6LC.2.1.7 parts A-H — RFC 4861 §7.1.1
    FOR    ${part}    IN    A    B    C    D    E    F    G    H
        Check Should Pass    nd.invalid_ns_is_ignored    ${part}
    END

Link-Local Address Is Probed Before Use
    [Documentation]    v6LC.3.1.1 — RFC 4862 §5.4
    Check Should Pass    slaac.link_local_address_is_probed_before_use

Global Address Is Formed From An RA And Probed
    [Documentation]    v6LC.3.2.1 part A — RFC 4862 §5.5.3, §5.4
    Check Should Pass    slaac.global_address_is_formed_and_probed    A
