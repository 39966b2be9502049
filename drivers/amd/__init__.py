"""AMD drivers: KFD, the AM userspace PCI driver, USB transport and flash."""
