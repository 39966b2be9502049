"""AM: the userspace PCI driver that brings an AMD GPU up with no kernel driver."""
