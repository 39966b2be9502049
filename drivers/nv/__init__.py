"""NVIDIA's kernel driver from userspace: the RM ioctls of /dev/nvidiactl and /dev/nvidiaN, UVM's /dev/nvidia-uvm,
memory, channels and the usermode doorbell. The same code drives a real GPU (NVK+NV) and the mock (MOCK+NV)."""
