"""usergpu: drive, emulate and inspect AMD and NVIDIA GPUs from userspace.

The public API (DESIGN.md) grows here name by name as each part becomes real.
"""

from usergpu.errors import Error

__version__ = "0.1.0"
__all__ = ["Error", "__version__"]
