// SPDX-License-Identifier: Apache-2.0
// `tether ports`: the serial ports libserialport finds.
#include <iostream>

#include "commands.hpp"
#include "tether/serial/serial_port.hpp"

namespace tether::cli {

int ports_command() {
  std::cout << adapters::list_ports_text();
  return exit_ok;
}

}  // namespace tether::cli
