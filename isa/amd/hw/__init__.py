"""Hand-written hardware facts that AMD's drivers and the mock hardware both read (the lowest floor both import):
the SoC's register addressing and clock, the interrupt ring, the page-table format, the PSP protocol, performance
counters and thread-trace registers, the IP-block register maps, Navi31's BAR5 registers and the ASM24xx USB
bridge's vendor protocol."""
