"""The mock KFD machine (MOCKKFD+AMD): amdkfd's /dev/kfd and topology, amdgpu's render nodes and sysfs, over the
shared engines of emu/amd/mock."""
