"""Error types, sorted by who has to act.

* ``UsageError``: the user gave us something we cannot use (a malformed target
  file, an unknown check id).  The CLI prints one line and exits 2.
* ``BenchError``: the test bench broke (a missing tool, a lab that did not come
  up, a DUT that is not on the link).  A check that raises it gets the verdict
  ERROR, never FAIL or PASS.
"""


class V6GateError(Exception):
    """Base class; ``str(exc)`` is a complete one-line message for a person."""


class UsageError(V6GateError):
    exit_code = 2


class InputFileError(UsageError):
    """A file the user gave is unusable: one line, the file first, then where, what and the fix."""

    def __init__(self, path, field, problem, fix):
        self.path, self.field, self.problem, self.fix = str(path), field, problem, fix
        where = f"{self.path}: {field}" if field else self.path
        super().__init__(f"{where}: {problem}; {fix}")


class TargetFileError(InputFileError):
    pass


class BenchError(V6GateError):
    """The bench (tools, lab, link, DUT reachability) could not do its part."""


class MissingTool(BenchError):
    def __init__(self, tool, package):
        super().__init__(
            f"'{tool}' is not installed: run ./v6gate setup (or apt-get install {package})"
        )
        self.tool = tool
        self.package = package


class LabError(BenchError):
    pass


class NotApplicable(Exception):
    """The check does not apply to this target (SKIP with this reason)."""
