"""What real and emulated paths both read: the instruction sets, code objects, kernel descriptors and parameter
layouts, the SQTT codec, the OpenCL/CUDA compilers (amd/, nv/), the ELF reader both vendors' code objects share
(elf.py) and compile_opencl for either vendor (compile.py)."""
