/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cortex-M3 port for the TI Stellaris LM3S6965 (QEMU -M lm3s6965evb):
 * the line is UART0 (0x4000C000) at 115200 8N1; SysTick measures the idle
 * time of a read (TETHER_CM3_IDLE_TICKS core clocks, about 100 ms at the 12 MHz
 * reset clock); diagnostics go to UART1 (0x4000D000), one line each, e.g.
 * qemu-system-arm ... -serial pty -serial file:diag.txt
 *
 * A read sleeps in WFI until a byte or the SysTick arrives. Interrupts stay
 * masked (PRIMASK): a pending UART0 or SysTick interrupt only wakes the core,
 * no handler runs. Sleeping instead of spinning on the flag register matters
 * under QEMU, where every register read costs the emulator's I/O thread time.
 */
#include <stddef.h>
#include <stdint.h>

#include "tether/firmware_shim/port.h"

#ifndef TETHER_CM3_CLOCK_HZ
#define TETHER_CM3_CLOCK_HZ 12000000u
#endif
#ifndef TETHER_CM3_IDLE_TICKS
#define TETHER_CM3_IDLE_TICKS (TETHER_CM3_CLOCK_HZ / 10u)
#endif
#define TETHER_CM3_BAUD 115200u

#define REG(addr) (*(volatile uint32_t*)(addr))

/* system control: clock gating */
#define SYSCTL_RCGC1 REG(0x400FE104u)
#define SYSCTL_RCGC2 REG(0x400FE108u)
/* GPIO port A: PA0/PA1 are U0RX/U0TX; port D PD2/PD3 are U1RX/U1TX */
#define GPIOA_AFSEL REG(0x40004420u)
#define GPIOA_DEN REG(0x4000451Cu)
#define GPIOD_AFSEL REG(0x40007420u)
#define GPIOD_DEN REG(0x4000751Cu)

/* UART register offsets */
#define UART0 0x4000C000u
#define UART1 0x4000D000u
#define UART_DR 0x000u
#define UART_FR 0x018u
#define UART_IBRD 0x024u
#define UART_FBRD 0x028u
#define UART_LCRH 0x02Cu
#define UART_CTL 0x030u
#define UART_IM 0x038u
#define UART_ICR 0x044u
#define UART_IM_RX ((1u << 4) | (1u << 6)) /* receive, receive time-out */
#define UART_FR_RXFE (1u << 4)
#define UART_FR_TXFF (1u << 5)
#define UART_LCRH_FEN (1u << 4)
#define UART_LCRH_WLEN8 (3u << 5)
#define UART_CTL_EN ((1u << 0) | (1u << 8) | (1u << 9)) /* UARTEN, TXE, RXE */

/* NVIC and system control block */
#define NVIC_ISER0 REG(0xE000E100u)
#define NVIC_ICPR0 REG(0xE000E280u)
#define SCB_ICSR REG(0xE000ED04u)
#define SCB_ICSR_PENDSTCLR (1u << 25)
#define UART0_IRQ 5u

/* SysTick */
#define SYST_CSR REG(0xE000E010u)
#define SYST_RVR REG(0xE000E014u)
#define SYST_CVR REG(0xE000E018u)
#define SYST_CSR_ENABLE (1u << 0)
#define SYST_CSR_TICKINT (1u << 1)
#define SYST_CSR_CLKSOURCE (1u << 2)
#define SYST_CSR_COUNTFLAG (1u << 16)

static int s_ready;

static void uart_init(uint32_t base) {
  /* divisor = clock / (16 * baud): integer part and 6-bit fraction */
  uint32_t div64 = (TETHER_CM3_CLOCK_HZ * 4u + TETHER_CM3_BAUD / 2u) / TETHER_CM3_BAUD;
  REG(base + UART_CTL) = 0u;
  REG(base + UART_IBRD) = div64 / 64u;
  REG(base + UART_FBRD) = div64 % 64u;
  REG(base + UART_LCRH) = UART_LCRH_WLEN8 | UART_LCRH_FEN;
  REG(base + UART_CTL) = UART_CTL_EN;
}

static void port_init(void) {
  if (s_ready) {
    return;
  }
  SYSCTL_RCGC1 |= (1u << 0) | (1u << 1); /* UART0, UART1 */
  SYSCTL_RCGC2 |= (1u << 0) | (1u << 3); /* GPIO A, GPIO D */
  GPIOA_AFSEL |= 0x03u;
  GPIOA_DEN |= 0x03u;
  GPIOD_AFSEL |= 0x0Cu;
  GPIOD_DEN |= 0x0Cu;
  uart_init(UART0);
  uart_init(UART1);
  /* interrupts only wake WFI; they are never taken */
  __asm__ volatile("cpsid i" ::: "memory");
  REG(UART0 + UART_IM) = UART_IM_RX;
  NVIC_ISER0 = 1u << UART0_IRQ;
  SYST_RVR = (TETHER_CM3_IDLE_TICKS - 1u) & 0x00FFFFFFu;
  SYST_CVR = 0u;
  SYST_CSR = SYST_CSR_ENABLE | SYST_CSR_TICKINT | SYST_CSR_CLKSOURCE;
  s_ready = 1;
}

int tether_port_read(uint8_t* buf, size_t max) {
  size_t n = 0;
  port_init();
  SYST_CVR = 0u;  /* restart the idle period */
  (void)SYST_CSR; /* reading clears COUNTFLAG */
  for (;;) {
    while (n < max && (REG(UART0 + UART_FR) & UART_FR_RXFE) == 0u) {
      buf[n++] = (uint8_t)(REG(UART0 + UART_DR) & 0xFFu);
    }
    if (n != 0u) {
      return (int)n;
    }
    if ((SYST_CSR & SYST_CSR_COUNTFLAG) != 0u) {
      return 0; /* idle */
    }
    /* forget old wake-ups, look once more, then sleep until the next one */
    REG(UART0 + UART_ICR) = UART_IM_RX;
    NVIC_ICPR0 = 1u << UART0_IRQ;
    SCB_ICSR = SCB_ICSR_PENDSTCLR;
    if ((REG(UART0 + UART_FR) & UART_FR_RXFE) != 0u) {
      __asm__ volatile("wfi" ::: "memory");
    }
  }
}

static void uart_put(uint32_t base, uint8_t byte) {
  while ((REG(base + UART_FR) & UART_FR_TXFF) != 0u) {
  }
  REG(base + UART_DR) = byte;
}

int tether_port_write(const uint8_t* buf, size_t len) {
  size_t i;
  port_init();
  for (i = 0; i < len; ++i) {
    uart_put(UART0, buf[i]);
  }
  return 0;
}

void tether_port_diag(const char* text) {
  port_init();
  while (*text != '\0') {
    uart_put(UART1, (uint8_t)*text++);
  }
  uart_put(UART1, (uint8_t)'\r');
  uart_put(UART1, (uint8_t)'\n');
}
