*** Settings ***
Documentation     Firmware release gate: may this build ship?
...
...               Compared with: the previous release's results.json (BASELINE).  Its FAILs are known failures.
...               Scope:        the host areas (AREAS) and the performance gates (GATES), default profile.
...               Pass:         nothing newly FAILs.  A known failure (waived, or a FAIL of the baseline) passes with a
...                             warning; a part the bench could not decide (ERROR, NOT_JUDGED, INCONCLUSIVE) is
...                             shown as skipped with its reason, not as a regression.
...               Deliverables: report.html with its Diff page against the baseline, compliance matrix, MANIFEST.sha256.
...
...               robot --variable BASELINE:reports/runs/<previous>/results.json --variable TARGET:dut.yaml \
...                     suites/robot/release_gate.robot
Library           v6gate.robot.V6Gate    areas=${AREAS}    gates=${GATES}    profile=${PROFILE}    baseline=${BASELINE}
Suite Setup       Open V6Gate Session    target=${TARGET}    profile=${PROFILE}
Suite Teardown    Run Keywords    Write V6Gate Reports    AND    Close V6Gate Session

*** Variables ***
${TARGET}         lab
${AREAS}          all
${GATES}          all
${PROFILE}        default
${BASELINE}       ${EMPTY}

*** Test Cases ***
Nothing Newly Fails Against The Previous Release
    [Documentation]    Generated: one test per check part and gate, judged against the baseline.
    [Template]    Check Should Not Regress
    icmpv6.echo_request_is_answered    A
