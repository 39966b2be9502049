"""AMD GPU ISA: generated opcode tables, decoder, disassembler and assembler."""
