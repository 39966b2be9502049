"""Generated bindings of the real kernel and hardware interfaces, and their generator (python -m usergpu.autogen)."""
