"""The runtime's AMD back-end: the device over KFD or AM, code-object programs, PM4/AQL/SDMA queues, the SQTT and
PMC profiler."""
