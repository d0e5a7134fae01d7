// SPDX-License-Identifier: Apache-2.0
#include "tether/scenario/expectations.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "tether/scenario/expectation_window.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::runtime {

namespace {

const char* const figure_names[] = {"x_m",       "y_m",     "z_m",       "depth_m", "heading_deg", "roll_deg",
                                    "pitch_deg", "yaw_deg", "speed_m_s", "vx_m_s",  "vy_m_s",      "vz_m_s"};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// whitespace-separated words; a double-quoted string is one word (without its quotes)
bool words(const std::string& s, std::vector<std::string>& out) {
  out.clear();
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ' ' || s[i] == '\t') {
      ++i;
      continue;
    }
    if (s[i] == '"') {
      const std::size_t end = s.find('"', i + 1);
      if (end == std::string::npos) return false;
      out.push_back(s.substr(i + 1, end - i - 1));
      i = end + 1;
      continue;
    }
    std::size_t end = i;
    while (end < s.size() && s[end] != ' ' && s[end] != '\t') ++end;
    out.push_back(s.substr(i, end - i));
    i = end;
  }
  return true;
}

bool number(const std::string& w, double& out) {
  if (w.empty()) return false;
  char* end = nullptr;
  out = std::strtod(w.c_str(), &end);
  return end == w.c_str() + w.size() && std::isfinite(out);
}

// "20", "20s", "20 s" (the unit may be its own word): seconds >= 0
bool seconds(const std::vector<std::string>& w, std::size_t& i, double& out) {
  if (i >= w.size()) return false;
  std::string t = w[i++];
  if (t.size() > 1 && t.back() == 's') t.pop_back();
  if (!number(t, out) || out < 0) return false;
  if (i < w.size() && w[i] == "s") ++i;
  return true;
}

bool parse_that(const std::string& text, ExpectationConfig& e) {
  std::vector<std::string> w;
  if (!words(text, w) || w.empty()) return false;
  const std::string& op = w[0];
  if (op == "within")
    return w.size() == 4 && w[2] == "of" && number(w[1], e.a) && e.a >= 0 && number(w[3], e.b) &&
           ((e.op = ExpectOp::within), true);
  if (op == "between")
    return w.size() == 4 && w[2] == "and" && number(w[1], e.a) && number(w[3], e.b) && e.a <= e.b &&
           ((e.op = ExpectOp::between), true);
  if (op == "matches") {
    if (w.size() != 2 || w[1].empty() || text.find('"') == std::string::npos) return false;
    e.op = ExpectOp::matches;
    e.pattern = w[1];
    return true;
  }
  static const std::pair<const char*, ExpectOp> ops[] = {{"<", ExpectOp::lt},  {"<=", ExpectOp::le},
                                                         {">", ExpectOp::gt},  {">=", ExpectOp::ge},
                                                         {"==", ExpectOp::eq}, {"!=", ExpectOp::ne}};
  for (const auto& [name, o] : ops)
    if (op == name) {
      e.op = o;
      return w.size() == 2 && number(w[1], e.a);
    }
  return false;
}

bool parse_when(const std::string& text, ExpectationConfig& e) {
  std::vector<std::string> w;
  if (!words(text, w) || w.empty()) return false;
  std::size_t i = 1;
  if (w[0] == "always") {
    e.when = ExpectWhen::always;
    return w.size() == 1;
  }
  if (w[0] == "at" && w.size() == 2 && w[1] == "end") {
    e.when = ExpectWhen::at_end;
    return true;
  }
  if (w[0] == "after") {
    e.when = ExpectWhen::after;
    return seconds(w, i, e.t0_s) && i == w.size();
  }
  if (w[0] == "eventually") {
    e.when = ExpectWhen::eventually;
    if (w.size() == 1) return true;
    if (w[1] != "before") return false;
    i = 2;
    return seconds(w, i, e.t1_s) && e.t1_s > 0 && i == w.size();
  }
  if (w[0] == "during") {
    // during [10 s, 20 s] / during [10, 20]
    std::string rest;
    for (std::size_t k = 1; k < w.size(); ++k) rest += w[k] + " ";
    if (rest.empty() || rest.front() != '[') return false;
    const std::size_t close = rest.find(']');
    if (close == std::string::npos) return false;
    const auto parts = split(rest.substr(1, close - 1), ',');
    if (parts.size() != 2) return false;
    std::vector<std::string> a, b;
    words(parts[0], a);
    words(parts[1], b);
    std::size_t ia = 0, ib = 0;
    e.when = ExpectWhen::during;
    return seconds(a, ia, e.t0_s) && ia == a.size() && seconds(b, ib, e.t1_s) && ib == b.size() && e.t1_s >= e.t0_s &&
           rest.find_first_not_of(' ', close + 1) == std::string::npos;
  }
  return false;
}

int find_index(const std::vector<EndpointConfig>& list, const std::string& name) {
  for (std::size_t i = 0; i < list.size(); ++i)
    if (list[i].name == name) return static_cast<int>(i);
  return -1;
}

// resolves `value:`; false with the reason in `why`
bool resolve(const std::string& value, const Scenario& sc, ExpectationConfig& e, std::string& why) {
  std::string path = value;
  // a channel index: DEVICE[i]
  if (!path.empty() && path.back() == ']') {
    const std::size_t open = path.rfind('[');
    double ch = 0;
    if (open == std::string::npos || !number(path.substr(open + 1, path.size() - open - 2), ch) || ch < 0 || ch > 15 ||
        ch != std::floor(ch)) {
      why = "a channel index is [0] .. [15]";
      return false;
    }
    e.channel = static_cast<int>(ch);
    path = path.substr(0, open);
  }
  const auto seg = split(path, '.');
  if (seg.size() == 3 && seg[0] == "endpoints") {
    e.endpoint = find_index(sc.endpoints, seg[1]);
    if (e.endpoint < 0) {
      why = "no endpoint named \"" + seg[1] + "\"";
      return false;
    }
    if (seg[2] == "log") {
      e.kind = QuantityKind::log;
      return true;
    }
    e.kind = QuantityKind::endpoint;
    e.counter = seg[2];
    for (const auto& c : expect_counters())
      if (c == e.counter) return true;
    std::string list;
    for (const auto& c : expect_counters()) list += (list.empty() ? "" : ", ") + c;
    why = "an endpoint has the counters " + list + " and its firmware's log";
    return false;
  }
  if (seg.size() == 3 && seg[0] == "feedback") {
    bool known = false;
    for (const auto& f : sc.feedback) known = known || f.name == seg[1];
    if (!known) {
      why = "no feedback processor named \"" + seg[1] + "\"";
      return false;
    }
    e.kind = QuantityKind::feedback;
    e.processor = seg[1];
    e.field = seg[2];
    return true;
  }
  if (seg.empty() || seg[0].empty()) {
    why = "a quantity path";
    return false;
  }
  const int vehicle = sc.model.find_vehicle(seg[0]);
  if (vehicle < 0) {
    why = "no vehicle named \"" + seg[0] + "\" (or endpoints.NAME.COUNTER, feedback.NAME.FIGURE)";
    return false;
  }
  const auto figure = [&](const std::string& name) {
    for (std::size_t k = 0; k < std::size(figure_names); ++k)
      if (name == figure_names[k]) {
        e.figure = static_cast<BodyFigure>(k);
        return true;
      }
    return false;
  };
  if (seg.size() == 2 && seg[1] == "contacts") {
    e.kind = QuantityKind::contacts;
    e.vehicle = vehicle;
    return true;
  }
  if (seg.size() == 2 && figure(seg[1])) {
    const auto& bodies = sc.model.vehicles[static_cast<std::size_t>(vehicle)].bodies;
    if (bodies.empty()) {
      why = "a vehicle with bodies (\"" + seg[0] + "\" has none)";
      return false;
    }
    e.kind = QuantityKind::body;
    e.body = bodies.front();
    return true;
  }
  if (seg.size() == 3) {
    for (std::size_t d = 0; d < sc.devices.size(); ++d)
      if (sc.devices[d].name.full() == path) {
        e.kind = QuantityKind::device;
        e.device = static_cast<int>(d);
        return true;
      }
    const int body = sc.model.find_body(seg[0] + "." + seg[1]);
    if (body >= 0 && figure(seg[2])) {
      e.kind = QuantityKind::body;
      e.body = body;
      return true;
    }
  }
  std::string list;
  for (const char* f : figure_names) list += std::string(list.empty() ? "" : ", ") + f;
  why = "VEHICLE[.PART].FIGURE (" + list + "), VEHICLE.contacts or VEHICLE.PART.DEVICE[channel]";
  return false;
}

std::string where(const ConfigNode& n) {
  std::ostringstream s;
  s << n.context().file << ":" << n.yaml().Mark().line + 1 << ":" << n.yaml().Mark().column + 1;
  return s.str();
}

}  // namespace

const std::vector<std::string>& expect_counters() {
  static const std::vector<std::string> c = {"replies", "late", "misses", "stale", "corrupt", "faults", "implausible"};
  return c;
}

std::vector<ExpectationConfig> parse_expectations(const ConfigNode& node, const Scenario& scenario) {
  std::vector<ExpectationConfig> out;
  if (!node.yaml().IsDefined() || !node.expect_sequence()) return out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const ConfigNode x = node.at(i);
    if (!x.is_map()) {
      x.error("expected an expectation {value, that, when}, got " + describe_value(x.yaml()));
      continue;
    }
    if (!x.expect_map({"name", "value", "that", "when"})) continue;
    ExpectationConfig e;
    e.where = where(x);
    e.value = x.string("value");
    const std::string that = x.string("that");
    const std::string when = x.string_or("when", "always");
    std::string why;
    if (!e.value.empty() && !resolve(e.value, scenario, e, why)) x["value"].error("expected " + why);
    if (!that.empty() && !parse_that(that, e))
      x["that"].error(
          "expected a condition: < X, <= X, > X, >= X, == X, != X, within T of X, between A and B, "
          "or matches \"text\"; got \"" +
          that + "\"");
    if (!when.empty() && !parse_when(when, e))
      x["when"].error(
          "expected always, at end, after T s, during [A s, B s], eventually or eventually before T s; "
          "got \"" +
          when + "\"");
    if ((e.kind == QuantityKind::log) != (e.op == ExpectOp::matches) && !that.empty() && !e.value.empty())
      x["that"].error(e.kind == QuantityKind::log ? "a firmware log is checked with matches \"text\""
                                                  : "matches \"text\" is for endpoints.NAME.log");
    if (e.kind == QuantityKind::log && e.when != ExpectWhen::eventually)
      x["when"].error("a log line is expected `eventually` or `eventually before T s` (some line contains the text)");
    e.name = x.has("name") ? x.string("name") : e.value + " " + that + " (" + when + ")";
    out.push_back(std::move(e));
  }
  return out;
}

ExpectationConfig parse_condition(const ConfigNode& x, const Scenario& scenario) {
  ExpectationConfig e;
  if (!x.is_map()) {
    x.error("expected a condition {value, that}, got " + describe_value(x.yaml()));
    return e;
  }
  if (!x.expect_map({"value", "that"})) return e;
  e.where = where(x);
  e.value = x.string("value");
  const std::string that = x.string("that");
  std::string why;
  if (!e.value.empty() && !resolve(e.value, scenario, e, why)) x["value"].error("expected " + why);
  if (e.kind == QuantityKind::log) x["value"].error("a condition cannot read a firmware log");
  if (!that.empty() && (!parse_that(that, e) || e.op == ExpectOp::matches))
    x["that"].error("expected a condition: < X, <= X, > X, >= X, == X, != X, within T of X or between A and B; got \"" +
                    that + "\"");
  e.name = e.value + " " + that;
  return e;
}

ExpectWindow expectation_window(const ExpectationConfig& c, double first_s, double last_s) {
  switch (c.when) {
    case ExpectWhen::always: return {first_s, last_s};
    case ExpectWhen::after: return {c.t0_s, last_s};
    case ExpectWhen::during: return {c.t0_s, c.t1_s};
    case ExpectWhen::eventually: return {first_s, c.t1_s > 0 ? c.t1_s : last_s};
    case ExpectWhen::at_end: return {last_s, last_s};
  }
  return {first_s, last_s};
}

}  // namespace tether::runtime
