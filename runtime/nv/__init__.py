"""The runtime's NVIDIA back-end: the device over the RM driver, cubin programs, GPFIFO channels and QMDs."""
