"""Robot Framework front-end (thin): keywords over the same Session.run the
pytest plugin uses.

    *** Settings ***
    Library    v6gate.robot.V6Gate
    Suite Setup       Open V6Gate Session    target=lab
    Suite Teardown    Close V6Gate Session

    *** Test Cases ***
    Echo Request To The Link-Local Address Is Answered
        Check Should Pass    icmpv6.echo_request_is_answered    A
"""

from .library import V6Gate

__all__ = ["V6Gate"]
