"""The seam a foreign runtime (tinygrad) offers for mocks, served by usergpu's mock machines: its file I/O of
/dev/kfd and sysfs (fileio.py), its USB transport (usb3.py) and the doorbell agent (agent.py)."""
