/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AVR port for the ATmega328P: the line is USART0 at 115200 8N1 (U2X, F_CPU
 * 16 MHz by default). Received bytes go into a small ring buffer from the
 * receive interrupt, so none are lost while the shim or the control step is
 * busy; a read waits up to TETHER_AVR_IDLE_MS for the first byte. The 328P has
 * no second UART, so diagnostics are dropped (tether_error_text() still has
 * the runtime's reason).
 */
#ifndef F_CPU
#define F_CPU 16000000UL
#endif

#include <avr/interrupt.h>
#include <avr/io.h>
#include <stddef.h>
#include <stdint.h>
#include <util/delay.h>

#include "tether/firmware_shim/port.h"

#define TETHER_AVR_BAUD 115200UL
#define TETHER_AVR_UBRR ((F_CPU + 4UL * TETHER_AVR_BAUD) / (8UL * TETHER_AVR_BAUD) - 1UL)
#ifndef TETHER_AVR_IDLE_MS
#define TETHER_AVR_IDLE_MS 100u
#endif
/* ring of 64 bytes: indices wrap with a mask; one byte each, so reads are atomic */
#define RING_SIZE 64u
#define RING_MASK (RING_SIZE - 1u)

static volatile uint8_t s_ring[RING_SIZE];
static volatile uint8_t s_head; /* written by the interrupt */
static volatile uint8_t s_tail; /* written by tether_port_read */
static volatile uint8_t s_overruns;
static uint8_t s_ready;

ISR(USART_RX_vect) {
  uint8_t byte = UDR0;
  uint8_t next = (uint8_t)((s_head + 1u) & RING_MASK);
  if (next == s_tail) {
    s_overruns = (uint8_t)(s_overruns + 1u); /* full: the frame will fail its CRC and be re-sent */
    return;
  }
  s_ring[s_head] = byte;
  s_head = next;
}

static void port_init(void) {
  if (s_ready) {
    return;
  }
  UBRR0H = (uint8_t)(TETHER_AVR_UBRR >> 8);
  UBRR0L = (uint8_t)(TETHER_AVR_UBRR & 0xFFu);
  UCSR0A = (uint8_t)_BV(U2X0);
  UCSR0C = (uint8_t)(_BV(UCSZ01) | _BV(UCSZ00));
  UCSR0B = (uint8_t)(_BV(RXEN0) | _BV(TXEN0) | _BV(RXCIE0));
  s_ready = 1u;
  sei();
}

int tether_port_read(uint8_t* buf, size_t max) {
  uint16_t waited_10us = 0u;
  size_t n = 0u;
  port_init();
  while (s_head == s_tail) {
    if (waited_10us >= (uint16_t)(TETHER_AVR_IDLE_MS * 100u)) {
      return 0;
    }
    _delay_us(10);
    ++waited_10us;
  }
  while (n < max && s_tail != s_head) {
    buf[n++] = s_ring[s_tail];
    s_tail = (uint8_t)((s_tail + 1u) & RING_MASK);
  }
  return (int)n;
}

int tether_port_write(const uint8_t* buf, size_t len) {
  size_t i;
  port_init();
  for (i = 0u; i < len; ++i) {
    while ((UCSR0A & _BV(UDRE0)) == 0u) {
    }
    UDR0 = buf[i];
  }
  return 0;
}

void tether_port_diag(const char* text) { (void)text; }

/* when main() returns, exit() runs the .fini sections: sleep with interrupts
 * off, which halts the part (and which simavr reports as "done") instead of
 * avr-libc's endless loop */
void tether_avr_halt(void) __attribute__((naked, used, section(".fini1")));
void tether_avr_halt(void) {
  __asm__ volatile(
      "cli\n\t"
      "ldi r24, %0\n\t"
      "out %1, r24\n\t"
      "sleep\n\t" ::"M"(_BV(SE)),
      "I"(_SFR_IO_ADDR(SMCR))
      : "r24");
}
