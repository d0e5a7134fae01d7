/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runs an ATmega328P firmware ELF under simavr and bridges its USART0 to a
 * pseudo-terminal, which it announces on stdout:
 *
 *   tether-bridge: uart0 on /dev/pts/N
 *
 * It exits when the firmware stops (main returned: simavr reports "done") or
 * crashes. Stop it with SIGTERM; it installs no signal handler, because
 * simavr's uart_pty_stop() hangs when one is installed.
 *
 * Build (host): gcc -O2 -I/usr/include/simavr -I/usr/include/simavr/parts
 *   simavr_bridge.c -lsimavrparts -lsimavr -lelf -lpthread -lutil -o simavr_bridge
 * Usage: simavr_bridge FIRMWARE.elf [MCU [FREQUENCY_HZ]]   (atmega328p, 16000000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_avr.h"
#include "sim_elf.h"
#include "uart_pty.h"

int main(int argc, char** argv) {
  static elf_firmware_t firmware;
  static uart_pty_t pty;
  const char* mcu = argc > 2 ? argv[2] : "atmega328p";
  unsigned long frequency = argc > 3 ? strtoul(argv[3], NULL, 10) : 16000000ul;
  avr_t* avr;
  int state;

  if (argc < 2) {
    fprintf(stderr, "usage: %s FIRMWARE.elf [MCU [FREQUENCY_HZ]]\n", argv[0]);
    return 2;
  }
  memset(&firmware, 0, sizeof firmware);
  if (elf_read_firmware(argv[1], &firmware) != 0) {
    fprintf(stderr, "tether-bridge: cannot read %s\n", argv[1]);
    return 2;
  }
  /* an AVR_MCU section in the ELF wins over the command line */
  if (firmware.mmcu[0] != '\0') {
    mcu = firmware.mmcu;
  }
  if (firmware.frequency == 0u) {
    firmware.frequency = (uint32_t)frequency;
  }
  avr = avr_make_mcu_by_name(mcu);
  if (avr == NULL) {
    fprintf(stderr, "tether-bridge: simavr does not know %s\n", mcu);
    return 2;
  }
  avr_init(avr);
  avr_load_firmware(avr, &firmware);

  uart_pty_init(avr, &pty);
  uart_pty_connect(&pty, '0');
  printf("tether-bridge: uart0 on %s (%s at %lu Hz)\n", pty.port[0].slavename, mcu, (unsigned long)avr->frequency);
  fflush(stdout);

  do {
    state = avr_run(avr);
  } while (state != cpu_Done && state != cpu_Crashed);
  printf("tether-bridge: firmware %s\n", state == cpu_Done ? "finished" : "crashed");
  fflush(stdout);
  avr_terminate(avr);
  return state == cpu_Done ? 0 : 1;
}
