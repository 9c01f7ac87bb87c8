/* The GA-2 driver of the firmware (ga2.h). */
#include "ga2.h"

int ga2_check(uintptr_t base) {
    return ga2_read(base, GA2_ID) == GA2_MAGIC && ga2_read(base, GA2_PARAMS) == GA2_PARAMS_VALUE;
}

void ga2_load(uintptr_t base, const uint32_t *words, uint32_t n_words) {
    for (uint32_t k = 0; k < n_words; k++)
        ga2_write(base, GA2_IMEM_BASE + 4 * k, words[k]);
    ga2_write(base, GA2_PROG_LEN, n_words / GA2_INSTR_WORDS);
}

void ga2_start(uintptr_t base, uint32_t ext_base, int irq) {
    ga2_write(base, GA2_IRQ_STATUS, GA2_IRQ_STATUS_DONE_MASK);
    ga2_write(base, GA2_IRQ_ENABLE, irq ? GA2_IRQ_ENABLE_DONE_MASK : 0);
    ga2_write(base, GA2_EXT_BASE, ext_base);
    ga2_write(base, GA2_CTRL, GA2_CTRL_START_MASK);
}

int ga2_poll(uintptr_t base, uint32_t max_polls) {
    for (uint32_t k = 0; k < max_polls; k++)
        if (ga2_read(base, GA2_STATUS) & GA2_STATUS_DONE_MASK)
            return 1;
    return 0;
}

void ga2_result_read(uintptr_t base, ga2_result *r) {
    r->cycles = ga2_read(base, GA2_CYCLES);
    r->mem_stall = ga2_read(base, GA2_MEM_STALL);
    r->error_code = ga2_read(base, GA2_ERROR_CODE);
    r->error_pc = ga2_read(base, GA2_ERROR_PC);
    r->bus_error = (ga2_read(base, GA2_STATUS) & GA2_STATUS_BUS_ERROR_MASK) != 0;
}
