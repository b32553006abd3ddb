*** Settings ***
Documentation     One DUT of a campaign: the campaign's selection of checks against this DUT's target file, judged
...               against its waivers and its baseline.
...
...               Scope:        the campaign's areas (AREAS), default profile, one DUT (TARGET).
...               Pass:         nothing newly FAILs on this DUT.  A known failure (waived, or a FAIL of its baseline)
...                             passes with a warning; a part the bench could not decide (ERROR, NOT_JUDGED,
...                             INCONCLUSIVE) is shown as skipped with its reason.
...               Deliverables: the DUT's run directory (RUN_DIR) as 'v6gate run' writes it; the campaign's fleet report.
...
...               'v6gate campaign robot CAMPAIGN.yaml' runs this suite once per DUT, in parallel with pabot (one
...               argument file per DUT: TARGET, RUN_DIR, BASELINE, CAMPAIGN_DUT), and builds the fleet report from
...               the DUTs' run directories, as 'v6gate campaign run' does.
Library           v6gate.robot.V6Gate    areas=${AREAS}    profile=${PROFILE}    baseline=${BASELINE}
...               run_dir=${RUN_DIR}    campaign_dut=${CAMPAIGN_DUT}
Suite Setup       Open V6Gate Session    target=${TARGET}    profile=${PROFILE}
Suite Teardown    Run Keywords    Write V6Gate Reports    AND    Close V6Gate Session

*** Variables ***
${TARGET}         lab
${AREAS}          all
${PROFILE}        default
${BASELINE}       ${EMPTY}
${RUN_DIR}        ${EMPTY}
${CAMPAIGN_DUT}   ${EMPTY}

*** Test Cases ***
Nothing Newly Fails On This DUT
    [Documentation]    Generated: one test per check part of the campaign's areas, judged against the DUT's baseline.
    [Template]    Check Should Not Regress
    icmpv6.echo_request_is_answered    A
