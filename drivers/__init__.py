"""Drivers: every OS access goes through drivers/hal.py, the seam between real and mock hardware."""
