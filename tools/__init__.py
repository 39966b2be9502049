"""Command-line tools: usergpu, am_smi, amdflash and the profiler."""
