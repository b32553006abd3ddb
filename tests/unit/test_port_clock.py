"""net/port.py: kernel receive timestamps (wall clock) put on the monotonic clock without the error of a
receive thread preempted between its two clock reads (pure logic, fake clocks)."""

from v6gate.net.port import _WallToMono

OFFSET = 1_700_000_000.0  # wall - monotonic


class Clocks:
    """A monotonic clock and a wall clock OFFSET ahead; ``stall`` seconds pass during the next wall reads."""

    def __init__(self):
        self.mono = 100.0
        self.stalls = []

    def clock(self):
        return self.mono

    def wall(self):
        if self.stalls:
            self.mono += self.stalls.pop(0)  # time passes while the thread is off the CPU
        return self.mono + OFFSET


def test_a_preempted_reading_does_not_move_frames_earlier():
    c = Clocks()
    conv = _WallToMono(clock=c.clock, wall=c.wall)
    # the first triple is preempted for 5 ms between its reads; the next ones are not
    c.stalls = [0.0, 0.005, 0.0, 0.0]
    sent = c.mono
    arrived_wall = sent + 11e-6 + OFFSET  # an answer 11 us after the probe
    c.mono += 0.001
    t = conv(arrived_wall)
    assert abs(conv.offset - OFFSET) < 1e-4, conv.offset
    assert t >= sent, f"the answer was put {sent - t:.6f} s before the probe that caused it"


def test_a_worse_sample_does_not_replace_a_good_one():
    c = Clocks()
    conv = _WallToMono(clock=c.clock, wall=c.wall)
    conv(c.mono + OFFSET)
    good = conv.offset
    c.mono += 2.0  # past REFRESH_S: it samples again, and every try is preempted
    c.stalls = [0.0, 0.004] * 5
    conv(c.mono + OFFSET)
    assert conv.offset == good
    assert abs(conv(c.mono + OFFSET - 0.5) - (c.mono - 0.5)) < 1e-6
