"""AMD emulation: ISA, code objects, wave executor and mock hardware."""
