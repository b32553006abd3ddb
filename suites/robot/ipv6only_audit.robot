*** Settings ***
Documentation     IPv6-only readiness audit of one asset, for an agency's audit file (OMB M-21-07).
...
...               Active part:  the asset does not leak or fall back to IPv4 and works on an IPv6-only network
...                             (area v6only: RFC 8925 option 108, NAT64/DNS64, PREF64, CLAT), learns its DNS from
...                             Router Advertisements (area rdnss, RFC 8106) and from DHCPv6 (RFC 3646), and serves
...                             its storage services over IPv6 (area storage, when this v6gate has it).
...               Passive part: a capture of the asset's production link, judged host by host without sending a
...                             packet (v6gate audit): IPv4 traffic, DHCPv4 option 108, DNS over IPv6, ND.
...               Pass:         every active part PASSes, does not apply, or FAILs where waived; no host in the
...                             capture is found not ready.
...               Deliverables: report.html, compliance matrix, audit/ (per-host readiness), MANIFEST.sha256.
...
...               robot --variable TARGET:asset.yaml --variable CAPTURE:asset-link.pcapng suites/robot/ipv6only_audit.robot
Library           v6gate.robot.V6Gate    areas=${AREAS}    profile=${PROFILE}
Suite Setup       Open V6Gate Session    target=${TARGET}    profile=${PROFILE}
Suite Teardown    Run Keywords    Write V6Gate Reports    AND    Close V6Gate Session

*** Variables ***
${TARGET}         lab
${AREAS}          v6only,rdnss,rfc:3646,storage?
${PROFILE}        default
${CAPTURE}        ${EMPTY}
${HOSTS}          ${EMPTY}

*** Test Cases ***
The Asset Works IPv6-Only
    [Documentation]    Generated: one test per part of v6only, rdnss, the DHCPv6 DNS options and storage.
    [Template]    Check Should Pass
    v6only.clat_uses_the_discovered_nat64_prefix    pref64

The Asset's Link Shows IPv6-Only Readiness In A Capture
    [Documentation]    Passive: v6gate audit of ${CAPTURE} (its report goes to the run directory's audit/).
    Audit Capture Should Show IPv6-Only Readiness    ${CAPTURE}    ${HOSTS}
