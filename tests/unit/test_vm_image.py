"""The lab VM's image (lab/services/vm_target.py, fixtures/lab/vm-target/): its
roles agree with what tools/setup fetches, and the initramfs holds each role's
modules in load order, its host programs with their shared libraries, its
files and scripts."""

import re
import stat

import pytest

from v6gate.errors import LabError
from v6gate.lab.services import vm_target as V
from v6gate.paths import ROOT


def _setup_kmods() -> list[str]:
    text = re.sub(r"#.*", "", (ROOT / "tools" / "setup").read_text())  # comments may hold parentheses
    body = re.search(r"^kmods=\((.*?)\)$", text, re.S | re.M).group(1)
    words = body.split()
    return [w.rsplit("/", 1)[-1] for w in words]


def _archive(data: bytes) -> dict[str, tuple[int, bytes]]:
    found, off = {}, 0
    while True:
        assert data[off:off + 6] == b"070701"
        fields = [int(data[off + 6 + 8 * i:off + 14 + 8 * i], 16) for i in range(13)]
        namesize, filesize = fields[11], fields[6]
        name = data[off + 110:off + 110 + namesize - 1].decode()
        off = (off + 110 + namesize + 3) & ~3
        body = data[off:off + filesize]
        off = (off + filesize + 3) & ~3
        if name == "TRAILER!!!":
            assert off == len(data)
            return found
        found[name] = (fields[1], body)


def test_cpio_newc_archive_reads_back():
    arc = V._cpio_newc([("bin", 0o40755, b""), ("bin/x", 0o100755, b"abc"), ("init", 0o100755, b"#!/bin/sh\n")])
    assert _archive(arc) == {"bin": (0o40755, b""), "bin/x": (0o100755, b"abc"), "init": (0o100755, b"#!/bin/sh\n")}


def test_every_role_module_is_fetched_by_setup_and_none_twice():
    roles = V.load_roles()
    wanted = [m for spec in roles.values() for m in spec.get("modules") or []]
    fetched = _setup_kmods()
    assert sorted(set(wanted)) == sorted(set(fetched)), "roles.yaml and tools/setup's kmods disagree"
    assert len(wanted) == len(set(wanted)), "a module listed by two roles"


def test_role_files_and_scripts_exist():
    for name, spec in V.load_roles().items():
        for here in list((spec.get("files") or {}).values()) + [spec[k] for k in ("start", "reset") if spec.get(k)]:
            assert (V.FILES / here).is_file(), f"role {name}: {here} missing"


def test_the_closure_of_a_dynamic_program_holds_its_libraries_and_loader():
    libs = V.library_closure(["/usr/bin/ip"])
    assert any(lib.endswith("/libc.so.6") for lib in libs)
    assert any("ld-linux" in lib for lib in libs)
    assert V.library_closure(["/bin/busybox"]) == []  # static


@pytest.mark.skipif(not (V.IMAGE / "ready").is_file(), reason="the VM kernel is fetched by tools/setup")
def test_an_ipsec_image_holds_ip_with_its_libraries_and_the_xfrm_modules(tmp_path):
    data = _archive(V.build_initramfs(tmp_path / "i.cpio", ["ipsec"]).read_bytes())
    order = data["modules/order"][1].decode().split()
    roles = V.load_roles()
    assert order == roles["base"]["modules"] + roles["ipsec"]["modules"]
    assert order.index("ctr.ko") < order.index("drbg.ko") and order.index("sha512_generic.ko") < order.index("drbg.ko")
    assert "modules/nvmet.ko" not in data  # only the roles asked for
    mode, body = data["usr/bin/ip"]
    assert stat.S_ISREG(mode) and mode & 0o111 and body == open("/usr/bin/ip", "rb").read()
    for lib in V.library_closure(["/usr/bin/ip"]):
        assert lib.lstrip("/") in data, f"{lib} missing from the image"
    assert data["etc/protocols"][1].startswith(open("/etc/protocols", "rb").read()[:32])
    assert "roles/ipsec.start" in data and "roles/ipsec.reset" in data and "bin/v6g-sa" in data
    for name in data:  # every parent directory is in the archive before its files
        parent = name.rsplit("/", 1)[0] if "/" in name else None
        assert parent is None or stat.S_ISDIR(data[parent][0]), name


def test_an_unknown_role_is_one_line(tmp_path):
    if not (V.IMAGE / "ready").is_file():
        pytest.skip("the VM kernel is fetched by tools/setup")
    with pytest.raises(LabError, match="no role nosuch"):
        V.build_initramfs(tmp_path / "i.cpio", ["nosuch"])


def test_a_role_with_an_unknown_key_is_refused(tmp_path):
    bad = tmp_path / "roles.yaml"
    bad.write_text("base: {modules: []}\nx: {binary: [/bin/sh]}\n")
    with pytest.raises(LabError, match="unknown keys"):
        V.load_roles(bad)

