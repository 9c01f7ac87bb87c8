"""GA-2 golden model: ISA spec, arithmetic, assembler, reference machine."""
