// SPDX-License-Identifier: Apache-2.0
// `tether report RECORDING`: the HTML report of a recording (optionally compared with another).
#include <filesystem>
#include <iostream>
#include <string>

#include "commands.hpp"
#include "tether/report/report.hpp"

namespace tether::cli {

int report_command(const ReportOptions& options) {
  std::string output = options.output;
  if (output.empty()) {
    std::filesystem::path p(options.recording);
    p.replace_extension(".html");
    output = p.string();
  }
  std::string error;
  runtime::ReportOptions report;
  report.compare = options.compare;
  if (!runtime::write_report(options.recording, output, &error, report)) {
    std::cerr << "tether: " << error << '\n';
    return exit_usage;
  }
  std::cout << "report: " << output << '\n';
  return exit_ok;
}

}  // namespace tether::cli
