"""net/bulk_echo.py against real loopback sockets: a whole echo is timed, a
peer that stops echoing is the DUT's fault (a timeout), a refused
connection too, and bad arguments are not."""

import json
import socket
import threading
import time

from v6gate.net import bulk_echo


def _server(echo_limit: int | None, ended: list[str] | None = None):
    """A peer on ::1 that echoes (the first echo_limit bytes only); how the client ended the connection
    ("closed" or "reset") goes into `ended`."""
    srv = socket.socket(socket.AF_INET6)
    srv.bind(("::1", 0))
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        echoed = 0
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except ConnectionResetError:
                    how = "reset"
                    break
                if not data:
                    how = "closed"
                    break
                if echo_limit is None or echoed < echo_limit:
                    conn.sendall(data)
                    echoed += len(data)
        if ended is not None:
            ended.append(how)

    threading.Thread(target=serve, daemon=True).start()
    return srv, srv.getsockname()[1]


def test_a_whole_echo_is_complete_and_timed():
    srv, port = _server(None)
    with srv:
        out = bulk_echo.transfer("::1", port, 300_000, 10)
    assert out["complete"] and out["received"] == 300_000 and out["seconds"] > 0 and out["error"] is None


def test_an_echo_that_stops_is_a_timeout_of_the_dut():
    """...and the client resets the connection it gives up on (a server stuck sending into a black hole is
    freed at once), rather than closing it."""
    ended: list[str] = []
    srv, port = _server(20_000, ended)
    with srv:
        out = bulk_echo.transfer("::1", port, 300_000, 1.5)
        deadline = time.monotonic() + 5
        while not ended and time.monotonic() < deadline:
            time.sleep(0.01)
    assert not out["complete"] and out["dut_fault"] and "timed out" in out["error"]
    assert 20_000 <= out["received"] < 300_000
    assert ended == ["reset"]


def test_refused_connection_is_the_dut_s_and_bad_arguments_are_not(capsys):
    s = socket.socket(socket.AF_INET6)
    s.bind(("::1", 0))
    port = s.getsockname()[1]
    s.close()
    assert bulk_echo.transfer("::1", port, 10, 2)["dut_fault"]
    assert bulk_echo.main(["::1", "x"]) == 2
    assert json.loads(capsys.readouterr().out)["dut_fault"] is False
