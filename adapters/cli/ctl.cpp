// SPDX-License-Identifier: Apache-2.0
// `tether ctl`: one command to a live session over foxglove.websocket.v1 (docs/live.md).
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tether/live/client.hpp"
#include "tether/live/protocol.hpp"

namespace tether::cli {

namespace {

using nlohmann::json;

bool parse_number(const std::string& text, double& out) {
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0';
}

bool parse_vec3(const std::string& text, json& out) {
  out = json::array();
  std::size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    const auto comma = text.find(',', start);
    if ((i < 2) == (comma == std::string::npos)) return false;
    double v = 0;
    if (!parse_number(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start), v))
      return false;
    out.push_back(v);
    start = comma + 1;
  }
  return true;
}

int usage(const std::string& why) {
  std::cerr << "tether ctl: " << why
            << "\n  commands: status | pause | resume | step N | run-until T | rtf R | seek STEP |\n"
               "            force NAME BODY FX FY FZ [frame=world|body] [torque=X,Y,Z] [point=X,Y,Z] [duration=S] |\n"
               "            unforce NAME | fault KEY=VALUE... (a faults: entry, e.g. device=auv.hull.depth kind=bias "
               "value=0.5 duration_s=2) |\n"
               "            param get [NAME...] | param set NAME VALUE | watch TOPIC | topics | shutdown\n";
  return exit_usage;
}

void print_answer(const std::string& command, const json& r, bool as_json) {
  if (as_json) {
    std::cout << r.dump() << '\n';
    return;
  }
  if (r.contains("step") && r.contains("time_s")) {
    char line[256];
    std::snprintf(line, sizeof line, "%s: step %llu, t = %.3f s, %s, real-time factor %g", command.c_str(),
                  static_cast<unsigned long long>(r.value("step", 0ull)), r.value("time_s", 0.0),
                  r.value("paused", false) ? "paused" : (r.value("stepping", false) ? "stepping" : "running"),
                  r.value("real_time_factor", 0.0));
    std::cout << line;
    if (r.contains("forces") && !r["forces"].empty()) {
      std::cout << "; forces:";
      for (const auto& f : r["forces"]) std::cout << ' ' << f.value("name", "?") << " on " << f.value("body", "?");
    }
    std::cout << '\n';
  } else if (r.contains("takes_effect_at_step")) {
    std::cout << command << ": accepted, takes effect at step " << r["takes_effect_at_step"];
    if (r.contains("fault"))
      std::cout << "; fault \"" << r["fault"].get<std::string>() << "\""
                << (r.contains("starts_at_step") ? " starts at step " + r["starts_at_step"].dump() : std::string());
    std::cout << '\n';
  } else {
    std::cout << command << ": " << r.dump() << '\n';
  }
}

}  // namespace

int ctl_command(const CtlOptions& options) {
  const auto& a = options.args;
  if (a.empty()) return usage("no command");
  const std::string& cmd = a[0];

  // what to send, checked before connecting
  std::string service;
  json request = json::object();
  auto need = [&](std::size_t n) { return a.size() == n; };
  if (cmd == "status" || cmd == "pause" || cmd == "resume" || cmd == "shutdown") {
    if (!need(1)) return usage(cmd + " takes no arguments");
    service = "/tether/" + cmd;
  } else if (cmd == "step") {
    double n = 1;
    if (a.size() > 2 ||
        (a.size() == 2 && (!parse_number(a[1], n) || n < 1 || n != static_cast<double>(static_cast<std::uint64_t>(n)))))
      return usage("step N: N a whole number >= 1");
    service = "/tether/step";
    request["steps"] = static_cast<std::uint64_t>(n);
  } else if (cmd == "run-until") {
    double t = 0;
    if (!need(2) || !parse_number(a[1], t)) return usage("run-until T: T in simulation seconds");
    service = "/tether/run_until";
    request["time_s"] = t;
  } else if (cmd == "seek") {
    double n = 0;
    if (!need(2) || !parse_number(a[1], n) || n < 0 || n != static_cast<double>(static_cast<std::uint64_t>(n)))
      return usage("seek STEP: STEP a whole number >= 0 (a replay served live)");
    service = "/tether/seek";
    request["step"] = static_cast<std::uint64_t>(n);
  } else if (cmd == "rtf") {
    double r = 0;
    if (!need(2) || !parse_number(a[1], r)) return usage("rtf R: R a number in 0..1000");
    service = "/tether/set_rtf";
    request["rtf"] = r;
  } else if (cmd == "force") {
    if (a.size() < 6) return usage("force NAME BODY FX FY FZ [frame=...] [torque=...] [point=...] [duration=...]");
    service = "/tether/apply_force";
    request["name"] = a[1];
    request["body"] = a[2];
    json f = json::array();
    for (int i = 3; i < 6; ++i) {
      double v = 0;
      if (!parse_number(a[static_cast<std::size_t>(i)], v)) return usage("force: FX FY FZ must be numbers");
      f.push_back(v);
    }
    request["force"] = f;
    for (std::size_t i = 6; i < a.size(); ++i) {
      const auto eq = a[i].find('=');
      const std::string key = a[i].substr(0, eq), value = eq == std::string::npos ? "" : a[i].substr(eq + 1);
      json v;
      double d = 0;
      if (key == "frame" && (value == "world" || value == "body"))
        request["frame"] = value;
      else if ((key == "torque" || key == "point") && parse_vec3(value, v))
        request[key] = v;
      else if (key == "duration" && parse_number(value, d))
        request["duration_s"] = d;
      else
        return usage("force: unknown or malformed \"" + a[i] + "\"");
    }
  } else if (cmd == "fault") {
    // KEY=VALUE pairs (whole numbers, numbers, else text), or one JSON object
    if (a.size() < 2) return usage("fault KEY=VALUE... (the keys of a faults: entry) or fault '{...}'");
    service = "/tether/inject_fault";
    if (a.size() == 2 && !a[1].empty() && a[1].front() == '{') {
      request = json::parse(a[1], nullptr, false);
      if (!request.is_object()) return usage("fault: \"" + a[1] + "\" is not a JSON object");
    } else {
      for (std::size_t i = 1; i < a.size(); ++i) {
        const auto eq = a[i].find('=');
        if (eq == std::string::npos || eq == 0) return usage("fault: expected KEY=VALUE, got \"" + a[i] + "\"");
        const std::string key = a[i].substr(0, eq), value = a[i].substr(eq + 1);
        double d = 0;
        if (!value.empty() && value.find_first_not_of("0123456789") == std::string::npos && value.size() < 19)
          request[key] = std::stoull(value);
        else if (parse_number(value, d))
          request[key] = d;
        else
          request[key] = value;
      }
    }
  } else if (cmd == "unforce") {
    if (!need(2)) return usage("unforce NAME");
    service = "/tether/remove_force";
    request["name"] = a[1];
  } else if (cmd == "param") {
    if (a.size() < 2 || (a[1] != "get" && a[1] != "set")) return usage("param get [NAME...] | param set NAME VALUE");
    double v = 0;
    if (a[1] == "set" && (a.size() != 4 || !parse_number(a[3], v))) return usage("param set NAME VALUE");
  } else if (cmd == "watch") {
    if (!need(2)) return usage("watch TOPIC");
  } else if (cmd != "topics") {
    return usage("unknown command \"" + cmd + "\"");
  }

  std::string token = options.token;
  if (token.empty())
    if (const char* t = std::getenv("TETHER_LIVE_TOKEN")) token = t;
  live::Client client;
  std::string error;
  if (!client.connect(options.url, token, &error)) {
    std::cerr << "tether ctl: " << options.url << ": " << error << '\n';
    return exit_start_failed;
  }

  if (!service.empty()) {
    json response;
    if (!client.call(service, request, response, &error, options.timeout_s)) {
      std::cerr << "tether ctl: " << cmd << ": " << error << '\n';
      return exit_aborted;
    }
    if (!response.value("ok", false)) {
      std::cerr << "tether ctl: " << cmd << ": " << response.value("error", std::string("refused")) << '\n';
      return exit_aborted;
    }
    response.erase("ok");
    print_answer(cmd, response, options.json);
    client.close();
    return exit_ok;
  }

  if (cmd == "topics") {
    for (const auto& c : client.channels())
      std::cout << (options.json ? c.dump() : c.value("topic", "") + "  (" + c.value("schemaName", "") + ")") << '\n';
    client.close();
    return exit_ok;
  }

  if (cmd == "param") {
    json msg{{"op", a[1] == "get" ? "getParameters" : "setParameters"}, {"id", "ctl"}};
    if (a[1] == "get") {
      msg["parameterNames"] = json::array();
      for (std::size_t i = 2; i < a.size(); ++i) msg["parameterNames"].push_back(a[i]);
    } else {
      double v = 0;
      parse_number(a[3], v);
      msg["parameters"] = json::array({{{"name", a[2]}, {"value", v}}});
    }
    const std::size_t statuses_before = client.statuses().size();
    json values;
    if (!client.send_text(msg.dump(), &error) ||
        !client.wait_op("parameterValues", values, options.timeout_s, &error)) {
      std::cerr << "tether ctl: param: " << error << '\n';
      return exit_aborted;
    }
    for (std::size_t i = statuses_before; i < client.statuses().size(); ++i)
      std::cerr << "tether ctl: param: " << client.statuses()[i].value("message", "") << '\n';
    if (options.json) {
      std::cout << values["parameters"].dump() << '\n';
    } else {
      for (const auto& p : values["parameters"])
        std::cout << p.value("name", "?") << " = " << p["value"].dump() << '\n';
    }
    client.close();
    if (a[1] == "set" && values["parameters"].empty()) return exit_aborted;
    if (a[1] == "get" && a.size() > 2 && values["parameters"].size() != a.size() - 2) return exit_aborted;
    return exit_ok;
  }

  // watch TOPIC: one line per message (its time and payload) until the session ends
  std::uint32_t sub = 0;
  if (!client.subscribe(a[1], sub, &error)) {
    std::cerr << "tether ctl: watch: " << error << '\n';
    return exit_usage;
  }
  std::uint64_t seen = 0;
  for (;;) {
    live::Client::Frame f;
    if (!client.next(f, options.timeout_s, &error)) break;
    live::MessageData m;
    if (!f.binary || !live::decode_message_data(f.data, m) || m.subscription != sub) continue;
    if (options.json) {
      std::cout << "{\"time_ns\":" << m.time_ns << ",\"message\":" << m.payload << "}\n";
    } else {
      char t[32];
      std::snprintf(t, sizeof t, "%.3f", static_cast<double>(m.time_ns) * 1e-9);
      std::cout << t << ' ' << m.payload << '\n';
    }
    std::cout.flush();
    if (options.count && ++seen >= options.count) break;
  }
  client.close();
  return exit_ok;
}

}  // namespace tether::cli
