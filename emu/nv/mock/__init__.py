"""The mock NVIDIA machine (MOCK+NV): nvidia.ko's device files and its RM (machine.py, devfiles.py, rm.py,
objects.py, rm_classes.py, controls.py), nvidia-uvm (uvm.py), the chips it models (chips.py), and the mock GPUs
that run the channels (gpu.py and the engines)."""
