"""lab/hostpaths.py: the script that isolates a lab daemon's host paths
(pure logic; the lab tests run it for real with dhcpcd)."""

import pytest

from v6gate.errors import LabError
from v6gate.util.hostpaths import PrivatePaths


def test_binds_come_before_the_tmpfs_that_would_hide_their_sources(tmp_path):
    src = tmp_path / "state"
    src.mkdir()
    cmds = PrivatePaths(tmp_path / "s").bind(src, tmp_path).tmpfs("/run", mkdirs=("/run/dhcpcd",)).script()
    assert cmds[0] == "mount --make-rprivate /"
    assert cmds.index(f"mount --bind {src} {tmp_path}") < cmds.index("mount -t tmpfs -o size=64m,mode=0755 v6gate-private /run")
    assert cmds[-1] == "mkdir -p /run/dhcpcd"


def test_a_missing_mount_point_is_made_in_a_private_overlay_not_on_the_host(tmp_path):
    src, host = tmp_path / "src", tmp_path / "host"
    src.mkdir()
    host.mkdir()
    cmds = PrivatePaths(tmp_path / "scratch").bind(src, host / "a" / "b").script()
    overlay = next(c for c in cmds if c.startswith("mount -t overlay"))
    assert f"lowerdir={host}," in overlay and f"upperdir={tmp_path / 'scratch'}/" in overlay
    assert f"mkdir -p {host / 'a' / 'b'}" in cmds
    assert not (host / "a").exists(), "the host's tree was written"


def test_a_symlinked_file_is_replaced_inside_the_overlay(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "real").write_text("host")
    (tmp_path / "etc" / "resolv.conf").symlink_to(tmp_path / "real")
    src = tmp_path / "mine"
    src.write_text("lab")
    cmds = PrivatePaths(tmp_path / "scratch").bind(src, tmp_path / "etc" / "resolv.conf").script()
    assert any(c.startswith("mount -t overlay") and f"lowerdir={tmp_path / 'etc'}," in c for c in cmds)
    assert cmds.index(f"rm -f {tmp_path / 'etc' / 'resolv.conf'}") < cmds.index(
        f"mount --bind {src} {tmp_path / 'etc' / 'resolv.conf'}")


@pytest.mark.parametrize("build, words", [
    (lambda t: PrivatePaths(t / "s").bind(t / "nope", t), "does not exist"),
    (lambda t: PrivatePaths(t / "s").bind(t, "/run/x").tmpfs("/run"), "under a private tmpfs"),
    (lambda t: PrivatePaths(t / "s").tmpfs("/run", mkdirs=("/var/x",)), "not under it"),
    (lambda t: PrivatePaths(t / "scratch").bind(t, t / "missing" / "x"), "scratch directory"),
])
def test_impossible_isolation_is_a_lab_error(tmp_path, build, words):
    with pytest.raises(LabError, match=words):
        build(tmp_path).script()


def test_the_kept_work_directory_is_held_before_the_tmpfs_and_bound_back_after(tmp_path):
    work = tmp_path / "lab"
    work.mkdir()
    cmds = PrivatePaths(work / "s").tmpfs(tmp_path, mkdirs=(str(tmp_path / "ganesha"),)).keep(work).script()
    tmpfs = cmds.index(f"mount -t tmpfs -o size=64m,mode=0755 v6gate-private {tmp_path}")
    assert cmds[0] == f"cd {work}", "the shell must hold the directory before the tmpfs hides it"
    assert tmpfs < cmds.index(f"mount --no-canonicalize --bind . {work}") < cmds.index("cd /")


def test_a_kept_directory_no_tmpfs_covers_needs_nothing(tmp_path):
    cmds = PrivatePaths(tmp_path / "s").tmpfs("/var/lib/samba").keep(tmp_path).script()
    assert not any(c.startswith("cd ") or "--bind ." in c for c in cmds)


def test_keep_one_directory_only(tmp_path):
    with pytest.raises(LabError, match="keep one directory"):
        PrivatePaths(tmp_path / "s").keep(tmp_path).keep(tmp_path / "x")


def test_a_shell_line_runs_after_the_mounts(tmp_path):
    argv = PrivatePaths(tmp_path / "s").tmpfs("/run", mkdirs=("/run/ganesha",)).wrap_shell("exec true")
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"]
    assert argv[-1].endswith("mkdir -p /run/ganesha && exec true")
