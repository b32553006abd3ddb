"""A check's deferred cleanups that raise are logged into the result
(cleanup_errors), not swallowed, and do not change the verdict."""

from v6gate.core.context import CheckContext
from v6gate.core.verdict import Result


class _Port:
    def remove_responder(self, r):
        pass


def _ctx():
    ctx = CheckContext.__new__(CheckContext)
    ctx.nodes, ctx._deferred, ctx.cleanup_errors, ctx.port = {}, [], [], _Port()
    ctx._advertised, ctx.setup, ctx._link_parameters = {}, (), [set(), None]  # nothing advertised: nothing to withdraw
    return ctx


def test_failing_cleanups_are_logged_and_the_others_still_run():
    ctx, ran = _ctx(), []

    def withdraw_prefix():
        raise OSError("tc: no such device")

    ctx.defer(lambda: ran.append("last"))
    ctx.defer(withdraw_prefix)
    ctx.defer(lambda: ran.append("first"))
    ctx.cleanup()
    assert ran == ["first", "last"]
    assert len(ctx.cleanup_errors) == 1
    assert "withdraw_prefix: OSError: tc: no such device" in ctx.cleanup_errors[0]


def test_result_carries_them():
    r = Result(id="a.b", part=None, title="t", area="a", ipv6ready=None, rfc="RFC 1", verdict="PASS", reason="r",
               expected="e", seen="s", evidence={}, duration_s=0.1, started="x", cleanup_errors=["f: E: m"])
    assert r.as_dict()["cleanup_errors"] == ["f: E: m"]
    assert Result.from_dict(r.as_dict()).cleanup_errors == ["f: E: m"]
