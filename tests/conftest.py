"""The project's own tests.

tests/unit  pure logic, no root, no network (mocks allowed only here)
tests/lab   against real namespaces, daemons and packets (root)
"""

import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (network namespaces); run ./v6gate selftest as root")
    for item in items:
        if "tests/lab" in str(item.fspath):
            item.add_marker(skip)


def pytest_addoption(parser):
    g = parser.getgroup("controls", "v6gate controls (tests/lab/test_controls.py)")
    g.addoption("--controls-area", action="append", default=[], help="only checks of this area")
    g.addoption("--controls-check", action="append", default=[], help="only this check id")
    g.addoption("--controls-profile", default="default", choices=["default", "full"],
                help="'full' also proves the checks that wait on long protocol timers")
    g.addoption("--controls-stale", action="store_true",
                help="only parts whose reports/controls.json entry is missing, unproven or stale")
