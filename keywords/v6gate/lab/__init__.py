"""The embedded namespace lab (see lab.py) and its bookkeeping."""

from .lab import Lab, new_lab_id
from .topology import load_topology

__all__ = ["Lab", "load_topology", "new_lab_id"]
