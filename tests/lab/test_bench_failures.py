"""A run whose bench fails under it ends with the reports of what finished,
one line saying why and exit 3, with nothing half-written and `v6gate
verify` telling the truth about the run directory:

* the run directory fills up (a small tmpfs as --out, filled by another
  writer once the run has results);
* the run directory's file system turns read-only (an ext4 error);
* the tester interface is deleted (its veth) in the middle of the run: the
  part it happened in and every later part are ERROR, none a DUT verdict;
* the capture (dumpcap) is killed in the middle of the run: the same, since
  no later part could keep its pcap.

The file systems are mounted in a private mount namespace (``unshare -m``):
they are gone with the shell that made them, on every path (the ext4
image's loop device clears itself when unmounted); what the test looks at
is copied out first.  The DUT is the Linux stack of a namespace this
test makes (veth_dut.VethBench)."""

from __future__ import annotations

import os
import shlex
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from veth_dut import VethBench

from v6gate.paths import ROOT
from v6gate.report import incomplete

from conftest import load_results, spawn_v6gate, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, tmpfs)")
RUN = ["--no-gates", "-n", "0", "--area", "nd"]


@pytest.fixture
def bench():
    with VethBench(f"benchfail{os.getpid()}", prefix="bf", mac_byte=0x20) as b:
        yield b


def _records(run_dir: Path) -> int:
    return sum(p.read_text(errors="replace").count("\n") for p in (run_dir / "records").glob("*.jsonl")) \
        if (run_dir / "records").is_dir() else 0


def in_private_mount(tmp_path: Path, mount: str, target: str, then: str) -> tuple[int, str, str, Path]:
    """Run ``v6gate run`` with --out on a file system the shell command ``mount`` mounts on $D, in a private
    mount namespace; once the run has 3 results, run the shell command ``then``; wait for the run; `v6gate
    verify` it in there and copy the run directory out (to tmp_path/copy).  Returns (the run's exit, its
    stdout, its stderr, the copy)."""
    py = shlex.quote(sys.executable)
    mnt = tmp_path / "mnt"  # under the test's own directory: nothing is left in /tmp whatever happens
    mnt.mkdir()
    script = f"""
set -u
D={shlex.quote(str(mnt))}
{mount}
cd {shlex.quote(str(ROOT))}
timeout -s KILL 600 {py} -m v6gate.cli run --target {shlex.quote(target)} {' '.join(RUN)} --out "$D/run" \
    >{tmp_path}/run.out 2>{tmp_path}/run.err &
pid=$!
for i in $(seq 1 1500); do
    n=$(cat "$D"/run/records/*.jsonl 2>/dev/null | wc -l)
    [ "$n" -ge 3 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.2
done
{then}
echo $? >{tmp_path}/then.rc
wait $pid; echo $? >{tmp_path}/run.rc
{py} -m v6gate.cli verify "$D/run" >{tmp_path}/verify.out 2>&1; echo $? >{tmp_path}/verify.rc
cp -a "$D/run" {tmp_path}/copy
umount "$D"
"""
    cp = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", script],
                        capture_output=True, text=True, timeout=900)
    assert cp.returncode == 0, cp.stderr
    rc = int((tmp_path / "run.rc").read_text())
    return rc, (tmp_path / "run.out").read_text(), (tmp_path / "run.err").read_text(), tmp_path / "copy"


def nothing_half_written(run_dir: Path) -> None:
    """No temporary file is left, and every pcap is whole: its blocks end exactly at its end."""
    left = [p.name for p in run_dir.rglob("*") if p.name.endswith(".tmp")]
    assert not left, f"temporary files left: {left}"
    for p in (run_dir / "pcap").glob("*.pcapng") if (run_dir / "pcap").is_dir() else []:
        data, off = p.read_bytes(), 0
        while off + 12 <= len(data):
            (blen,) = struct.unpack_from("<I", data, off + 4)
            assert blen >= 12 and off + blen <= len(data), f"{p.name}: cut at byte {off}"
            off += blen
        assert off == len(data), f"{p.name}: {len(data) - off} stray bytes at its end"


def one_line(err: str, *words: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def test_a_full_run_directory(bench, tmp_path):
    """The tmpfs fills (another writer takes what is left) after the first results: the run stops at once,
    writes the reports of what finished into the room it kept, says so in one line, exit 3."""
    rc, out, err, copy = in_private_mount(tmp_path, 'mount -t tmpfs -o size=12m tmpfs "$D"', bench.target(tmp_path),
                                          'dd if=/dev/zero of="$D/filler" bs=64k 2>/dev/null')
    line = one_line(err, "run stopped:", "full")
    assert rc == 3, (rc, out, line)
    assert incomplete.MARKER in os.listdir(copy)
    nothing_half_written(copy)
    assert (copy / "results.json").is_file(), (copy / incomplete.MARKER).read_text()
    doc = load_results(copy)
    judged = [c for c in doc["checks"] if c["verdict"] in ("PASS", "FAIL")]
    assert judged, "the parts that finished before the disk filled are in the report"
    verify = (tmp_path / "verify.out").read_text()
    assert int((tmp_path / "verify.rc").read_text()) == 0 and "OK" in verify and "INCOMPLETE" in verify, verify


def test_a_run_directory_that_turns_read_only(bench, tmp_path):
    """The file system goes read-only under the run (an ext4 error with errors=remount-ro, as a failing disk
    does; a plain remount is refused while the capture holds a pcap open): nothing more can be written,
    not even INCOMPLETE's reason (the marker written at the start stays), one line, exit 3, and verify says
    the reports are missing (exit 1)."""
    image = tmp_path / "ext4.img"
    subprocess.run(["truncate", "-s", "64M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    rc, out, err, copy = in_private_mount(
        tmp_path, f'mount -o loop,errors=remount-ro {image} "$D"', bench.target(tmp_path),
        'echo 1 > /sys/fs/ext4/$(basename $(findmnt -no SOURCE "$D"))/trigger_fs_error && touch "$D/x" 2>/dev/null;'
        ' [ $? -ne 0 ]')
    assert (tmp_path / "then.rc").read_text().strip() == "0", "the file system did not turn read-only"
    one_line(err, "run stopped:", "Read-only file system")
    assert rc == 3, (rc, out)
    assert (copy / incomplete.MARKER).is_file() and not (copy / "results.json").exists()
    nothing_half_written(copy)
    verify = (tmp_path / "verify.out").read_text()
    assert int((tmp_path / "verify.rc").read_text()) == 1 and "missing: MANIFEST.sha256" in verify, verify


def break_mid_run(bench, out_dir: Path, act) -> tuple[int, str, float, float]:
    """Start ``v6gate run`` on the bench, once it has 3 results call ``act(its pid)``, wait for it to end.
    Returns (its exit, its output, how long it went on after ``act``, when ``act`` was done)."""
    proc = spawn_v6gate("run", "--target", bench.target(out_dir.parent), *RUN, "--out", out_dir)
    try:
        assert wait_for(lambda: _records(out_dir) >= 3, timeout=300), "no results"
        act(proc.pid)
        done = time.time()
        stdout, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stdout, time.time() - done, done


def test_the_tester_interface_deleted_mid_run(bench, tmp_path):
    """The part it happened in and every later part are ERROR (never the DUT's FAIL), the run ends within
    seconds of it, one line, exit 3; the reports are whole and verify; INCOMPLETE says the run stopped early."""
    out_dir = tmp_path / "run"
    rc, stdout, ended, deleted = break_mid_run(bench, out_dir,
                                               lambda _: bench.ip(bench.tester_ns, "link", "del", bench.tester_if(0)))
    assert rc == 3, stdout
    said = [ln for ln in stdout.splitlines() if ln.startswith("v6gate: run stopped:")]
    assert len(said) == 1 and "tester interface bf0 was deleted" in said[0], stdout
    doc = load_results(out_dir)
    after = [c for c in doc["checks"] if c["started"] >= time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(deleted + 1))]
    assert after and all(c["verdict"] in ("ERROR", "SKIP") for c in after), \
        [(c["id"], c["part"], c["verdict"]) for c in after if c["verdict"] not in ("ERROR", "SKIP")]
    not_run = [c for c in doc["checks"] if "this part was not run" in c["reason"]]
    assert not_run and ended < 60, f"the run went on for {ended:.0f} s after its tester interface was deleted"
    assert "tester interface bf0 was deleted" in (out_dir / incomplete.MARKER).read_text()  # stopped early
    nothing_half_written(out_dir)
    verify = subprocess.run([sys.executable, "-m", "v6gate.cli", "verify", str(out_dir)], capture_output=True,
                            text=True, cwd=ROOT)
    assert verify.returncode == 0, verify.stdout


def _descendants(pid: int, comm: str) -> list[int]:
    """The processes named ``comm`` below ``pid`` (by their parents, read from /proc)."""
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
            parent[int(d.name)] = (int(rest[1]), name)
    found = []
    for p, (_, name) in parent.items():
        if name != comm:
            continue
        q = p
        while q in parent and q != pid:
            q = parent[q][0]
        if q == pid:
            found.append(p)
    return found


def test_the_capture_killed_mid_run(bench, tmp_path):
    """dumpcap dies (SIGKILL) in the middle of the run: no later part could keep its pcap, so the part it
    happened in and every later part are ERROR (never a verdict without evidence), the run ends at once with
    one line naming dumpcap and how it ended, exit 3; every PASS or FAIL has its whole pcap; verify is OK."""
    out_dir = tmp_path / "run"
    dumpcap: list[int] = []

    def kill_dumpcap(run_pid: int) -> None:
        dumpcap.extend(_descendants(run_pid, "dumpcap"))
        assert len(dumpcap) == 1, dumpcap
        os.kill(dumpcap[0], 9)

    rc, stdout, ended, _ = break_mid_run(bench, out_dir, kill_dumpcap)
    assert rc == 3, stdout
    said = [ln for ln in stdout.splitlines() if ln.startswith("v6gate: run stopped:")]
    assert len(said) == 1 and f"pid {dumpcap[0]}) ended (killed by SIGKILL)" in said[0], stdout
    assert "Traceback" not in stdout
    doc = load_results(out_dir)
    judged = [c for c in doc["checks"] if c["verdict"] in ("PASS", "FAIL")]
    assert judged, "the parts that finished before are in the report"
    no_pcap = [f"{c['id']}#{c['part']}" for c in judged if not (ROOT / c["evidence"].get("pcap", "")).is_file()]
    assert not no_pcap, f"verdicts without their pcap: {no_pcap}"
    not_run = [c for c in doc["checks"] if "this part was not run" in c["reason"]]
    assert not_run and all("dumpcap" in c["reason"] for c in not_run), not_run[:1]
    assert ended < 60, f"the run went on for {ended:.0f} s after its capture died"
    assert "dumpcap" in (out_dir / incomplete.MARKER).read_text()
    nothing_half_written(out_dir)
    verify = subprocess.run([sys.executable, "-m", "v6gate.cli", "verify", str(out_dir)], capture_output=True,
                            text=True, cwd=ROOT)
    assert verify.returncode == 0, verify.stdout
