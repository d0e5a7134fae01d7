// SPDX-License-Identifier: Apache-2.0
// The log (spdlog) on the terminal and in the session folder, and the status line `tether run`
// rewrites in place: a log line clears it first and draws it again after itself.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include <unistd.h>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"

namespace tether::cli {

namespace {

// the terminal: stderr, with the status line (if one is shown) cleared before a log line
// and drawn again after it
std::mutex g_console_mutex;
std::string g_status_line;  // under g_console_mutex
bool g_status_tty = false;

class ConsoleSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  ConsoleSink() : inner_(std::make_shared<spdlog::sinks::stderr_color_sink_mt>()) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::lock_guard lock(g_console_mutex);
    const bool redraw = g_status_tty && !g_status_line.empty();
    if (redraw) std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    inner_->log(msg);
    inner_->flush();
    if (redraw) {
      std::fputs(g_status_line.c_str(), stderr);
      std::fflush(stderr);
    }
  }
  void flush_() override { inner_->flush(); }

 private:
  std::shared_ptr<spdlog::sinks::stderr_color_sink_mt> inner_;
};

std::shared_ptr<ConsoleSink> g_console;
spdlog::level::level_enum g_level = spdlog::level::info;

void update_logger_level() {
  auto level = spdlog::level::off;
  for (const auto& s : spdlog::default_logger()->sinks()) level = std::min(level, s->level());
  spdlog::default_logger()->set_level(level);
}

}  // namespace

void log_to_stderr() {
  g_console = std::make_shared<ConsoleSink>();
  g_console->set_level(g_level);
  auto logger = std::make_shared<spdlog::logger>("", g_console);
  logger->set_level(g_level);
  spdlog::set_default_logger(std::move(logger));
  g_status_tty = isatty(STDERR_FILENO) != 0;
}

bool set_log_level(const std::string& level) {
  const auto l = spdlog::level::from_str(level);
  if (l == spdlog::level::off && level != "off") return false;
  g_level = l;
  for (const auto& s : spdlog::default_logger()->sinks()) s->set_level(l);
  update_logger_level();
  return true;
}

bool log_to_file(const std::string& path, std::string* error) {
  try {
    auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, true);
    file->set_level(g_level);
    spdlog::default_logger()->sinks().push_back(std::move(file));
    update_logger_level();
    return true;
  } catch (const spdlog::spdlog_ex& e) {
    if (error) *error = e.what();
    return false;
  }
}

void quiet_console() {
  if (g_console) g_console->set_level(std::max(g_level, spdlog::level::warn));
  update_logger_level();
}

void show_status_line(const std::string& line) {
  std::lock_guard lock(g_console_mutex);
  g_status_line = g_status_tty ? line : std::string();
  if (g_status_tty)
    std::fputs(("\r\033[K" + line).c_str(), stderr);
  else if (!line.empty())
    std::fputs((line + "\n").c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace tether::cli
