// SPDX-License-Identifier: Apache-2.0
// `tether ctl`: one command to a live session over foxglove.websocket.v1 (docs/live.md).
// The verbs are a table; those that call a service build its request from their words with
// the service's own keys (tether/live/services.hpp).
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tether/live/client.hpp"
#include "tether/live/protocol.hpp"
#include "tether/live/services.hpp"

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

struct Verb;
int usage(const std::string& why);

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

// ---- what each verb does once connected

// calls the verb's service with the request built from its words, prints the answer
int call_service(live::Client& client, const CtlOptions& options, const std::string& service, const json& request) {
  const std::string& cmd = options.args[0];
  json response;
  std::string error;
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
  return exit_ok;
}

int topics(live::Client& client, const CtlOptions& options) {
  for (const auto& c : client.channels())
    std::cout << (options.json ? c.dump() : c.value("topic", "") + "  (" + c.value("schemaName", "") + ")") << '\n';
  return exit_ok;
}

int param(live::Client& client, const CtlOptions& options) {
  const auto& a = options.args;
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
  std::string error;
  if (!client.send_text(msg.dump(), &error) || !client.wait_op("parameterValues", values, options.timeout_s, &error)) {
    std::cerr << "tether ctl: param: " << error << '\n';
    return exit_aborted;
  }
  for (std::size_t i = statuses_before; i < client.statuses().size(); ++i)
    std::cerr << "tether ctl: param: " << client.statuses()[i].value("message", "") << '\n';
  if (options.json) {
    std::cout << values["parameters"].dump() << '\n';
  } else {
    for (const auto& p : values["parameters"]) std::cout << p.value("name", "?") << " = " << p["value"].dump() << '\n';
  }
  if (a[1] == "set" && values["parameters"].empty()) return exit_aborted;
  if (a[1] == "get" && a.size() > 2 && values["parameters"].size() != a.size() - 2) return exit_aborted;
  return exit_ok;
}

// watch TOPIC: one line per message (its time and payload) until the session ends
int watch(live::Client& client, const CtlOptions& options) {
  std::uint32_t sub = 0;
  std::string error;
  if (!client.subscribe(options.args[1], sub, &error)) {
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
  return exit_ok;
}

// ---- the verbs: one row each. A verb that calls a service names it; its words become the
// request through the service's own keys (live::services(): their types convert the words,
// and the request is checked against them before connecting, as the session would check it)

struct Verb {
  const char* verb = "";
  const char* arguments = "";           // for the usage text
  const char* service = nullptr;        // the live service it calls; nullptr: `run` does the work
  std::vector<const char*> positional;  // the keys its first words fill, in order (a vec3 takes three)
  std::size_t required_words = 0;       // of the positional words
  bool key_values = false;              // then KEY=VALUE words, KEY a key of the service (or an alias)
  bool json_object = false;             // or instead one '{...}' word: the whole request
  std::vector<std::pair<const char*, const char*>> aliases;  // KEY=VALUE names -> the service's keys
  int (*run)(live::Client&, const CtlOptions&) = nullptr;
  bool (*check)(const std::vector<std::string>& args) = nullptr;  // the words of a verb with `run`
};

// a verb that calls `service`
Verb calls(const char* verb, const char* arguments, const char* service, std::vector<const char*> positional = {},
           std::size_t required_words = 0, bool key_values = false, bool json_object = false,
           std::vector<std::pair<const char*, const char*>> aliases = {}) {
  Verb v;
  v.verb = verb;
  v.arguments = arguments;
  v.service = service;
  v.positional = std::move(positional);
  v.required_words = required_words;
  v.key_values = key_values;
  v.json_object = json_object;
  v.aliases = std::move(aliases);
  return v;
}

// a verb that does its own work once connected
Verb runs(const char* verb, const char* arguments, int (*run)(live::Client&, const CtlOptions&),
          bool (*check)(const std::vector<std::string>&)) {
  Verb v;
  v.verb = verb;
  v.arguments = arguments;
  v.run = run;
  v.check = check;
  return v;
}

const std::vector<Verb>& verbs() {
  static const std::vector<Verb> table = {
      calls("status", "", "/tether/status"),
      calls("pause", "", "/tether/pause"),
      calls("resume", "", "/tether/resume"),
      calls("step", "[N]", "/tether/step", {"steps"}),
      calls("run-until", "T", "/tether/run_until", {"time_s"}, 1),
      calls("rtf", "R", "/tether/set_rtf", {"rtf"}, 1),
      calls("seek", "STEP (a replay served live)", "/tether/seek", {"step"}, 1),
      calls("force", "NAME BODY FX FY FZ [frame=world|body] [torque=X,Y,Z] [point=X,Y,Z] [duration=S]",
            "/tether/apply_force", {"name", "body", "force"}, 5, true, false, {{"duration", "duration_s"}}),
      calls("unforce", "NAME", "/tether/remove_force", {"name"}, 1),
      calls("fault",
            "KEY=VALUE... | '{JSON}' (a faults: entry, e.g. device=auv.hull.depth kind=bias value=0.5 duration_s=2)",
            "/tether/inject_fault", {}, 0, true, true),
      calls("autopilot-arm", "ENDPOINT true|false [force=true]", "/tether/autopilot_arm", {"endpoint", "arm"}, 2, true),
      calls("autopilot-mode", "ENDPOINT MODE (e.g. ALT_HOLD)", "/tether/autopilot_mode", {"endpoint", "mode"}, 2),
      calls("autopilot-manual", "ENDPOINT X Y Z R [buttons=N] (each -1000..1000)", "/tether/autopilot_manual",
            {"endpoint", "x", "y", "z", "r"}, 5, true),
      calls("autopilot-target", "ENDPOINT [depth=M] [heading=DEG]", "/tether/autopilot_target", {"endpoint"}, 1, true,
            false, {{"depth", "depth_m"}, {"heading", "heading_deg"}}),
      calls("mcu-serial", "ENDPOINT TEXT (bytes for the firmware's Serial; $'0,128,255\\n' in bash)",
            "/tether/mcu_serial", {"endpoint", "text"}, 2),
      calls("shutdown", "", "/tether/shutdown"),
      calls("call", "SERVICE ['{JSON}'] (any service the session offers; the session checks it)", nullptr),
      runs("param", "get [NAME...] | set NAME VALUE", param,
           [](const std::vector<std::string>& a) {
             double v = 0;
             return a.size() >= 2 && (a[1] == "get" || (a[1] == "set" && a.size() == 4 && parse_number(a[3], v)));
           }),
      runs("watch", "TOPIC", watch, [](const std::vector<std::string>& a) { return a.size() == 2; }),
      runs("topics", "", topics, [](const std::vector<std::string>& a) { return a.size() == 1; }),
  };
  return table;
}

int usage(const std::string& why) {
  std::cerr << "tether ctl: " << why << "\n  commands:\n";
  for (const Verb& v : verbs()) std::cerr << "    " << v.verb << (*v.arguments ? " " : "") << v.arguments << '\n';
  return exit_usage;
}

// a word as the JSON value `key` takes: its type decides; what does not convert stays text,
// and the check against the service's keys then says what was expected
json word_value(const live::RequestKey* key, const std::string& word) {
  double d = 0;
  json v;
  if (!key) return word;
  switch (key->type) {
    case live::KeyType::integer:
      if (!word.empty() && word.find_first_not_of("0123456789") == std::string::npos && word.size() < 20)
        return std::stoull(word);
      if (word.size() > 1 && word[0] == '-' && word.find_first_not_of("0123456789", 1) == std::string::npos &&
          word.size() < 20)
        return std::stoll(word);
      return word;
    case live::KeyType::number: return parse_number(word, d) ? json(d) : json(word);
    case live::KeyType::vec3: return parse_vec3(word, v) ? v : json(word);
    case live::KeyType::object: {
      v = json::parse(word, nullptr, false);
      return v.is_discarded() ? json(word) : v;
    }
    case live::KeyType::boolean: return word == "true" ? json(true) : word == "false" ? json(false) : json(word);
    case live::KeyType::string: return word;
  }
  return word;
}

const live::RequestKey* find_key(const live::Service& service, const std::string& name) {
  for (const auto& k : service.keys)
    if (k.name == name) return &k;
  return nullptr;
}

// a service verb's words as its request; false with the usage error
bool build_request(const Verb& verb, const live::Service& service, const std::vector<std::string>& a, json& request,
                   std::string& why) {
  const std::string form = std::string(verb.verb) + (*verb.arguments ? " " : "") + verb.arguments;
  auto fail = [&](std::string text) {
    why = std::move(text);
    return false;
  };
  request = json::object();
  std::size_t at = 1;
  if (verb.json_object && a.size() == 2 && !a[1].empty() && a[1].front() == '{') {
    request = json::parse(a[1], nullptr, false);
    if (!request.is_object()) return fail(std::string(verb.verb) + ": \"" + a[1] + "\" is not a JSON object");
    at = a.size();
  }
  for (const char* name : verb.positional) {
    if (at >= a.size()) break;
    const live::RequestKey* key = find_key(service, name);
    if (key && key->type == live::KeyType::vec3) {  // three words
      if (at + 3 > a.size()) return fail(form);
      json v = json::array();
      for (std::size_t i = 0; i < 3; ++i) {
        double d = 0;
        v.push_back(parse_number(a[at + i], d) ? json(d) : json(a[at + i]));
      }
      request[name] = v;
      at += 3;
    } else {
      request[name] = word_value(key, a[at++]);
    }
  }
  if (at - 1 < verb.required_words) return fail(form);
  for (; at < a.size(); ++at) {
    const auto eq = a[at].find('=');
    if (!verb.key_values) return fail(form);
    if (eq == std::string::npos || eq == 0)
      return fail(std::string(verb.verb) + ": expected KEY=VALUE, got \"" + a[at] + "\"");
    std::string key = a[at].substr(0, eq);
    for (const auto& [alias, name] : verb.aliases)
      if (key == alias) key = name;
    request[key] = word_value(find_key(service, key), a[at].substr(eq + 1));
  }
  if (verb.json_object && a.size() < 2) return fail(form);
  std::string check;
  if (!live::validate_request(service, request, &check)) return fail(std::string(verb.verb) + ": " + check);
  return true;
}

}  // namespace

int ctl_command(const CtlOptions& options) {
  const auto& a = options.args;
  if (a.empty()) return usage("no command");
  const Verb* verb = nullptr;
  for (const Verb& v : verbs())
    if (a[0] == v.verb) verb = &v;
  if (!verb) return usage("unknown command \"" + a[0] + "\"");

  // what to send, checked before connecting
  std::string service;
  json request = json::object();
  std::string why;
  if (verb->service) {
    const live::Service* s = live::find_service(verb->service);
    if (!s) return usage(std::string(verb->verb) + ": no service " + verb->service);
    if (!build_request(*verb, *s, a, request, why)) return usage(why);
    service = verb->service;
  } else if (!verb->run) {  // call SERVICE ['{JSON}']: the session checks it
    if (a.size() < 2 || a.size() > 3) return usage("call SERVICE ['{JSON}']");
    service = a[1];
    if (a.size() == 3) request = json::parse(a[2], nullptr, false);
    if (!request.is_object()) return usage("call: \"" + a[2] + "\" is not a JSON object");
  } else if (!verb->check(a)) {
    return usage(std::string(verb->verb) + " " + verb->arguments);
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
  const int code = verb->run ? verb->run(client, options) : call_service(client, options, service, request);
  client.close();
  return code;
}

}  // namespace tether::cli
