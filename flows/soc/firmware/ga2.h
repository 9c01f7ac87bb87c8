/* A small driver for GA-2 on the system bus: the register map is ga2_regs.h, generated from
   sim/regmap.py (the same table as the RTL's decode and the Python driver, sim/host.py). */
#ifndef GA2_H
#define GA2_H

#include <stdint.h>
#include "ga2_regs.h"

typedef struct {
    uint32_t cycles;      /* CYCLES: START to DONE, memory stalls included */
    uint32_t mem_stall;   /* MEM_STALL */
    uint32_t error_code;  /* sim.spec.ErrorCode; 0 after a HALT */
    uint32_t error_pc;
    uint32_t bus_error;   /* STATUS.BUS_ERROR */
} ga2_result;

static inline uint32_t ga2_read(uintptr_t base, uint32_t reg) {
    return *(volatile uint32_t *)(base + reg);
}

static inline void ga2_write(uintptr_t base, uint32_t reg, uint32_t value) {
    *(volatile uint32_t *)(base + reg) = value;
}

/* 1 when the hardware is GA-2 and the machine this firmware was built for. */
int ga2_check(uintptr_t base);

/* Copy an encoded program (4 words an instruction) into the instruction window; set PROG_LEN. */
void ga2_load(uintptr_t base, const uint32_t *words, uint32_t n_words);

/* Clear a pending interrupt, enable it (irq != 0), set EXT_BASE, start. */
void ga2_start(uintptr_t base, uint32_t ext_base, int irq);

/* Poll STATUS until DONE (at most max_polls reads); 0 when it did not stop. */
int ga2_poll(uintptr_t base, uint32_t max_polls);

void ga2_result_read(uintptr_t base, ga2_result *r);

#endif
