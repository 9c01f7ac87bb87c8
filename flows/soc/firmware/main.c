/* GA-2 SoC firmware: the digits MLP on GA-2, 16 images (flows/soc, docs/guide/soc.md).

   The model's weights are in main RAM already, at GA-2's external word 0 (the SoC loads them
   with the RAM's contents); digits.h (flows/soc/payload.py) holds the compiled program, each
   run's input images as GA-2 words, where the outputs are, and the reference machine's answers.
   For each run the firmware copies the inputs into GA-2's external memory, starts GA-2, waits
   for its interrupt line, reads the predicted classes and prints them over the UART, then
   `PASS` when every prediction (and every run's cycles less its memory stalls) equals the
   reference machine's, or `FAIL` naming the image. */
#include <stdint.h>
#include <irq.h>
#include <generated/csr.h>
#include <generated/mem.h>
#include <generated/soc.h>
#include "ga2.h"
#include "digits.h"

#define EXT_BASE MAIN_RAM_BASE
#define POLLS 2000000u

static void putc_(char c) {
    while (uart_txfull_read())
        ;
    uart_rxtx_write(c);
}

static void puts_(const char *s) {
    while (*s)
        putc_(*s++);
}

static void putu(uint32_t v) {
    char digits[10];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        putc_(digits[--n]);
}

static void finish(void) {
    for (volatile int k = 0; k < 20000; k++)    /* let the UART drain */
        ;
    sim_finish_finish_write(1);
}

/* Wait for GA-2's interrupt line (the CPU's pending register: no handler runs), then DONE. */
static int wait_irq(void) {
    irq_setmask(irq_getmask() | (1u << GA2_INTERRUPT));
    for (uint32_t k = 0; k < POLLS; k++)
        if (irq_pending() & (1u << GA2_INTERRUPT))
            return ga2_poll(GA2_BASE, 16);
    return 0;
}

int main(void) {
    volatile uint32_t *ext = (volatile uint32_t *)EXT_BASE;
    int bad = 0;
    puts_("GA-2 SoC: digits MLP, ");
    putu(DIGITS_IMAGES);
    puts_(" images in runs of ");
    putu(DIGITS_BATCH);
    puts_("\n");
    if (!ga2_check(GA2_BASE)) {
        puts_("FAIL: no GA-2 of this machine at GA2_BASE (ID or PARAMS differ)\n");
        finish();
        return 1;
    }
    ga2_load(GA2_BASE, digits_program, DIGITS_PROGRAM_WORDS);
    for (uint32_t run = 0; run < DIGITS_RUNS; run++) {
        const uint32_t *in = digits_inputs[run];
        for (uint32_t r = 0; r < DIGITS_INPUT_REGIONS; r++) {
            for (uint32_t k = 0; k < digits_input_words[r]; k++)
                ext[digits_input_addr[r] + k] = *in++;
        }
        ga2_start(GA2_BASE, EXT_BASE, 1);
        if (!wait_irq()) {
            puts_("FAIL: run ");
            putu(run);
            puts_(": no interrupt from GA-2 (STATUS ");
            putu(ga2_read(GA2_BASE, GA2_STATUS));
            puts_(", CYCLES ");
            putu(ga2_read(GA2_BASE, GA2_CYCLES));
            puts_(", MEM_STALL ");
            putu(ga2_read(GA2_BASE, GA2_MEM_STALL));
            puts_(")\n");
            bad++;
            break;
        }
        flush_cpu_dcache();
        ga2_result res;
        ga2_result_read(GA2_BASE, &res);
        puts_("run ");
        putu(run);
        puts_(": cycles ");
        putu(res.cycles);
        puts_(", mem_stall ");
        putu(res.mem_stall);
        puts_(", reference cycles ");
        putu(digits_reference_cycles);
        puts_("\n");
        if (res.error_code || res.bus_error || res.cycles - res.mem_stall != digits_reference_cycles) {
            puts_("FAIL: run ");
            putu(run);
            puts_(res.error_code ? ": GA-2 stopped on an error\n" : res.bus_error ? ": bus error\n"
                  : ": cycles - mem_stall differ from the reference machine's\n");
            bad++;
        }
        for (uint32_t i = 0; i < DIGITS_BATCH; i++) {
            uint32_t image = run * DIGITS_BATCH + i;
            if (image >= DIGITS_IMAGES)
                break;
            uint32_t got = ext[DIGITS_CLASS_ADDR + i * DIGITS_CLASS_STRIDE];
            puts_("image ");
            putu(image);
            puts_(": prediction ");
            putu(got);
            puts_(" (reference ");
            putu(digits_expected[image]);
            puts_(", label ");
            putu(digits_labels[image]);
            puts_(")\n");
            if (got != digits_expected[image]) {
                puts_("FAIL: image ");
                putu(image);
                puts_("\n");
                bad++;
            }
        }
    }
    puts_(bad ? "FAIL\n" : "PASS\n");
    finish();
    return bad;
}
