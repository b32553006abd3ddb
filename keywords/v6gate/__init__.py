"""v6gate: USGv6 / IPv6 Ready host conformance and IPv6-only readiness checks.

The library behind every front-end: the pytest plugin, the Robot Framework
library and the ``v6gate`` command all call into this package and nothing
else holds check logic.
"""

__version__ = "0.1.0"
