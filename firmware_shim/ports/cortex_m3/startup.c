/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bare-metal start-up for Cortex-M3 (LM3S6965 under qemu-system-arm): the
 * vector table, copying .data, zeroing .bss, calling main(). When main()
 * returns the core sleeps; QEMU keeps running until it is stopped.
 */
#include <stdint.h>

typedef void (*tether_handler_t)(void);

/* the vector table: initial stack pointer, then handlers */
typedef struct {
  uint32_t* initial_sp;
  tether_handler_t handlers[15];
} tether_vector_table_t;

extern uint32_t _estack, _sidata, _sdata, _edata, _sbss, _ebss;
extern int main(void);

void tether_reset_handler(void);
void tether_fault_handler(void);
void tether_default_handler(void);

void tether_reset_handler(void) {
  uint32_t* src = &_sidata;
  uint32_t* dst = &_sdata;
  while (dst < &_edata) {
    *dst++ = *src++;
  }
  for (dst = &_sbss; dst < &_ebss; ++dst) {
    *dst = 0u;
  }
  (void)main();
  for (;;) {
    __asm__ volatile("wfi");
  }
}

/* a fault stops here: a debugger shows where from the stacked PC */
void tether_fault_handler(void) {
  for (;;) {
  }
}

void tether_default_handler(void) {
  for (;;) {
  }
}

__attribute__((section(".isr_vector"), used)) const tether_vector_table_t tether_vectors = {
    &_estack,
    {
        tether_reset_handler,   /* reset */
        tether_default_handler, /* NMI */
        tether_fault_handler,   /* hard fault */
        tether_fault_handler,   /* memory management fault */
        tether_fault_handler,   /* bus fault */
        tether_fault_handler,   /* usage fault */
        0, 0, 0, 0,             /* reserved */
        tether_default_handler, /* SVCall */
        tether_default_handler, /* debug monitor */
        0,                      /* reserved */
        tether_default_handler, /* PendSV */
        tether_default_handler, /* SysTick (polled, never enabled as an interrupt) */
    }};
