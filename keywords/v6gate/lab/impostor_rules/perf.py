"""Impostor rules for the performance gates' faults."""

import time

from ..impostor import rule
from .nd import answer_ns_without_validation


@rule("answer_ns_after_delay")
def answer_ns_after_delay(pkt, dut, delay_s=0.05, **_):
    """Answer NS for the DUT's addresses like a conforming stack, but
    ``delay_s`` late (the fault drops the kernel's own answers)."""
    replies = answer_ns_without_validation(pkt, dut)
    if replies:
        time.sleep(delay_s)
    return replies
