"""Emulation: mock kernels and devices, and the ISA emulator."""
