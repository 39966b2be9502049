"""The mock PCI GPU board (MOCKPCI+AMD): a register-level model, one file per IP block (as amdgpu's gfx_v11_0.c,
gmc_v11_0.c are), its PCI function and sysfs files, VFIO, and the machine folder boards share between processes."""
