"""The HCQ runtime and the public Python API."""
