"""The mock flash board of the rescue tools: a Navi31's PCI function with its SMUIO ROM controller, the SPI flash
chip, and the PSP boot-firmware mailbox."""
