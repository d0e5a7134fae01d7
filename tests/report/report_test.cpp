// SPDX-License-Identifier: Apache-2.0
// tether report: the HTML holds the plots and the summary's figures, references nothing
// outside itself, copes with a recording cut short, and down-samples long series without
// losing their extremes.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <map>
#include <mutex>
#include <set>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "test_paths.hpp"
#include "tether/hal/nmea.hpp"
#include "tether/loop/in_process.hpp"
#include "tether/recording/foxglove_schemas.hpp"
#include "tether/recording/mcap_reader.hpp"
#include "tether/recording/recorder.hpp"
#include "tether/loop/recorder_inputs.hpp"
#include "tether/report/report.hpp"
#include "tether/loop/session.hpp"
#include "tether/report/svg_plot.hpp"
#include "example_controllers.hpp"

using namespace tether::runtime;

namespace {

const char* scenario_text = R"(name: circles
world:
  gravity_m_s2: [0, 0, -9.81]
  water: {density_kg_m3: 1025, surface_z_m: 0}
vehicles:
  - name: auv
    bodies:
      - {name: hull, shape: {type: cylinder, radius_m: 0.1, length_m: 1.2}, mass_kg: 38}
loop: {period_ms: 10, real_time_factor: 0, steps: 1500}
endpoints:
  - {name: ctl, type: in_process, vehicle: auv, deadline_ms: 5, timeout_policy: hold}
  - {name: tank, type: mqtt, vehicle: auv, deadline_ms: 2, timeout_policy: safe}
recording: {keyframe_every_steps: 100, queue_slots: 100000}
)";

// one folder per test process, removed when the process ends
struct TempFolder {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tether_report_test_" + std::to_string(getpid()));
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

std::string temp_path(const std::string& name) {
  static TempFolder folder;
  std::filesystem::create_directories(folder.dir);
  return (folder.dir / name).string();
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// a vehicle driving circles while diving and climbing; a tank rig that measures it, goes
// silent for a while and breaks near the end; two feedback processors' figures
std::string write_synthetic(const std::string& name, std::uint64_t steps, bool with_summary) {
  static const Scenario sc = parse_scenario(scenario_text, "circles.yaml");
  const std::string path = temp_path(name);
  Recorder rec(sc, {"ctl", "tank"}, {{"kalman", {"innovation_m", "gain"}}, {"estimate", {"drag", "drag_stddev"}}});
  std::string error;
  REQUIRE(rec.open(path, &error));
  std::vector<double> feedback;
  for (std::uint64_t k = 0; k < steps; ++k) {
    const double t = static_cast<double>(k) * 0.01;
    const double a = t * 0.4;
    auto state_at = [&](double offset) {
      WorldState s;
      s.step = k + 1;
      s.time_ns = static_cast<std::int64_t>(k + 1) * 10'000'000;
      BodyState b;
      b.position_m = Vec3(3 * std::cos(a) + offset, 3 * std::sin(a), -1.5 - 0.5 * std::sin(t * 0.3));
      b.orientation = quat_from_rpy(0.05 * std::sin(t), 0.1 * std::cos(t * 0.5), a + std::numbers::pi / 2);
      b.linear_momentum = Vec3(-38 * 1.2 * std::sin(a), 38 * 1.2 * std::cos(a), 0);
      s.bodies.push_back(b);
      return s;
    };
    const WorldState actual = state_at(0), projected = state_at(0.02);
    StepRecord r;
    r.step = k;
    r.time_ns = static_cast<std::int64_t>(k) * 10'000'000;
    r.state_hash = hash_state(actual);
    r.step_time_ns = 3000 + (k % 97) * 20 + (k == 700 ? 900'000 : 0);
    SlotRecord ctl;
    ctl.round_trip_ns = 800 + (k % 13) * 37;
    ctl.reply.step = k;
    BodyWrench w;
    w.force_body_n = Vec3(20 + 5 * std::sin(t), 0, -10 * std::cos(t * 0.3));
    w.torque_body_nm = Vec3(0, 0, 0.4 * std::sin(t * 2));
    ctl.reply.wrenches.emplace_back(0, w);
    DeviceCommand c;
    c.device = 3;
    c.size = 4;
    const float thrust = static_cast<float>(0.5 + 0.4 * std::sin(t));
    std::memcpy(c.bytes.data(), &thrust, 4);
    ctl.reply.commands.push_back(c);
    SlotRecord tank;
    if (k >= 1400) {
      tank.outcome = SlotOutcome::fault;
    } else if (k >= 500 && k < 540) {
      tank.outcome = SlotOutcome::timeout;
    } else {
      tank.round_trip_ns = 1'200'000 + (k % 29) * 21'000 + (k % 211 == 0 ? 3'000'000 : 0);
      tank.reply.step = k;
      if (k % 2 == 0) {
        Measurement m;
        m.body = 0;
        m.measured_time_ns = actual.time_ns;
        m.has_pose = true;
        m.position_m = actual.bodies[0].position_m +
                       Vec3(0.05 * std::sin(k * 1.7), 0.05 * std::cos(k * 2.3), 0.03 * std::sin(k * 0.9));
        m.orientation = actual.bodies[0].orientation;
        tank.reply.measurements.push_back(m);
      }
    }
    r.slots = {ctl, tank};
    feedback = {0.05 * std::sin(k * 1.7), 0.5 + 0.4 * std::exp(-t), 10 + 5 * std::exp(-t * 0.2),
                2 * std::exp(-t * 0.3)};
    Recorder::StepItem& item = rec.step_staging();
    item.record = r;
    item.actual = actual;
    item.projected = projected;
    item.values = feedback;
    item.sensors.clear();
    rec.push(Recorder::ItemKind::step, k, r.time_ns);
    if (k == 500) rec.event(k, r.time_ns, 3, "tank", "first missed deadline (policy safe)");
    if (k == 1400) rec.event(k, r.time_ns, 4, "tank", "faulted: <broker> went away & did not return (policy safe)");
  }
  nlohmann::json summary = {
      {"scenario", "circles"},
      {"outcome", "completed"},
      {"steps", steps},
      {"steps_planned", steps},
      {"sim_time_s", static_cast<double>(steps) * 0.01},
      {"wall_time_s", 1.25},
      {"real_time_factor", 0.0},
      {"achieved_real_time_factor", static_cast<double>(steps) * 0.01 / 1.25},
      {"step_time_ns", {{"p50", 3900}, {"p99", 4900}, {"max", 903000}, {"mean", 4100.5}, {"count", steps}}},
      {"overruns", 0},
      {"reanchors", 0},
      {"physics_substeps", steps * 5},
      {"recording", {{"path", path}, {"dropped_items", 0}}},
      {"endpoints",
       {{{"name", "ctl"},
         {"type", "in_process"},
         {"policy", "hold"},
         {"deadline_ms", 5.0},
         {"replies", steps},
         {"late", 0},
         {"misses", 0},
         {"stale", 0},
         {"corrupt", 0},
         {"faults", 0},
         {"round_trip_ns", {{"p50", 1000}, {"p99", 1250}, {"max", 1300}, {"mean", 1010.0}, {"count", steps}}}},
        {{"name", "tank"},
         {"type", "mqtt"},
         {"policy", "safe"},
         {"deadline_ms", 2.0},
         {"replies", 1360},
         {"late", 0},
         {"misses", 140},
         {"stale", 3},
         {"corrupt", 1},
         {"faults", 100},
         {"fault", "broker went away"},
         {"round_trip_ns", {{"p50", 1500000}, {"p99", 1800000}, {"max", 4200000}, {"mean", 1.5e6}, {"count", 1360}}}}}},
      {"feedback",
       {{{"name", "kalman"}, {"type", "kalman"}, {"phase", "post"}, {"vehicle", "auv"}, {"innovations", 700}},
        {{"name", "estimate"},
         {"type", "estimate"},
         {"phase", "post"},
         {"vehicle", "auv"},
         {"refits", 11},
         {"refit_failures", 1},
         {"refit_windows", 110},
         {"refit_error", "the trial has 2 usable windows <of 50 steps>"},
         {"combinations",
          {{"thrust_per_effective_mass", {{"value", 0.80216}, {"stddev", 0.00823}}},
           {"linear_drag_x_per_effective_mass", {{"value", 10.032}, {"stddev", 0.813}}}}},
         {"weak",
          {{{"shrink", 1.4},
            {"loadings", {{"quadratic_drag_y", 0.98}}},
            {"advice", "sideways motion: turns at several speeds (sway)"}}}}}}},
      {"vehicles", {{{"name", "auv"}, {"position_m", {3.0, 0.0, -1.5}}, {"depth_m", 1.5}, {"heading_deg", 90.0}}}},
      {"state_hash", 0x0123456789abcdefULL}};
  // without close() the destructor drains the queue and finishes the file with no summary
  if (with_summary) REQUIRE(rec.close(summary, &error));
  CHECK(rec.dropped() == 0);
  return path;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

// nothing is fetched: no URLs, scripts, external style sheets, fonts or images
void check_self_contained(const std::string& page) {
  // the inlined charting library is checked on its own: one script element, no source
  // attribute (its text names its licence's web address, which is no reference)
  std::string html = page;
  const auto lib = html.find("<script data-lib=\"dygraphs\">");
  REQUIRE(lib != std::string::npos);
  html.erase(lib, html.find("</script>", lib) - lib);
  CHECK(html.find("<script src") == std::string::npos);
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  CHECK(html.find("@font-face") == std::string::npos);
  CHECK(html.find(" src=") == std::string::npos);
  CHECK(html.find("href=") == std::string::npos);
  for (auto at = html.find("url("); at != std::string::npos; at = html.find("url(", at + 1))
    CHECK(html.compare(at, 5, "url(#") == 0);  // only references to the page's own clip paths
}

// the number of points in each drawn line
std::vector<std::size_t> path_points(const std::string& html) {
  // a plain scan: std::regex recurses per character and overflows the stack on long paths
  std::vector<std::size_t> out;
  const std::string open = "<path d=\"";
  for (auto at = html.find(open); at != std::string::npos; at = html.find(open, at + 1)) {
    const auto begin = at + open.size();
    const std::string d = html.substr(begin, html.find('"', begin) - begin);
    if (!d.empty() && d.back() == 'Z') continue;  // a ±σ band: the area around a line counted here
    // a point is one command (M, l, h or v); a step line's is h then v, counted once
    std::size_t points = 0;
    for (std::size_t k = 0; k < d.size(); ++k) {
      if (std::string_view("MLHVlhv").find(d[k]) == std::string_view::npos) continue;
      const auto next = d.find_first_of("MLHVlhvZ", k + 1);
      const bool corner =
          (d[k] == 'h' || d[k] == 'H') && next != std::string::npos && (d[next] == 'v' || d[next] == 'V');
      if (!corner) ++points;
    }
    out.push_back(points);
  }
  return out;
}

}  // namespace

TEST_CASE("the report shows every section, the summary's figures and nothing external") {
  const std::string rec = write_synthetic("synthetic.mcap", 1500, true);
  std::string html, error;
  REQUIRE(render_report(rec, html, &error));
  if (const char* keep = std::getenv("TETHER_REPORT_TEST_OUT")) std::ofstream(keep) << html;  // to look at it

  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("</html>") != std::string::npos);
  CHECK(html.find("<title>Tether report: circles</title>") != std::string::npos);
  CHECK(count(html, "<svg") >= 13);
  CHECK(count(html, "<svg") == count(html, "</svg>"));
  for (const char* title :
       {"Plan view (x–y)", "Depth profile (side view, x–depth)", "Depth over time", "Heading over time",
        "Roll and pitch over time", "Speed over time", "ctl: forces", "ctl: torques", "ctl: device #3",
        "Step time (phases 1–7)", "Round trip: ctl", "Round trip: tank", "Deadline misses (cumulative)", "kalman: gain",
        "kalman: innovation_m", "estimate: drag"})
    // (a title may go on: a chattering command's plot says it is drawn as an envelope)
    CHECK_MESSAGE(html.find(std::string(">") + svg::escape(title)) != std::string::npos, title);
  // series names in legends
  for (const char* label :
       {">actual<", ">projected<", ">measured<", ">auv.hull force_body.x<", ">auv.hull torque_body.z<",
        ">tank timeouts<", ">tank faults<", ">innovation_m<", ">gain<", ">drag<"})
    CHECK_MESSAGE(html.find(label) != std::string::npos, label);
  // components that stayed zero are left out
  CHECK(html.find("force_world.x") == std::string::npos);

  // the summary table
  CHECK(html.find("<td class=\"outcome-completed\">completed</td>") != std::string::npos);
  CHECK(html.find("1500 of 1500 planned") != std::string::npos);
  CHECK(html.find("p50 3.9 µs, p99 4.9 µs, max 903.0 µs, mean 4.1 µs") != std::string::npos);
  CHECK(html.find("<td>tank</td><td>mqtt</td><td>safe</td><td class=\"n\">2.000 ms</td><td class=\"n\">1360</td>") !=
        std::string::npos);
  CHECK(html.find("<td class=\"n\">1.50 ms</td><td class=\"n\">1.80 ms</td><td class=\"n\">4.20 ms</td>") !=
        std::string::npos);
  CHECK(html.find("fault = broker went away") != std::string::npos);
  CHECK(html.find("innovations = 700") != std::string::npos);
  // feedback as small multiples, one figure each; the estimate with its ±σ band (a shaded
  // area) and dygraphs' error bars, the standard deviation not drawn as a figure of its own
  CHECK(html.find(">estimate: drag</text>") != std::string::npos);
  CHECK(html.find(">estimate: drag_stddev</text>") == std::string::npos);
  CHECK(html.find(">kalman: gain</text>") != std::string::npos);
  CHECK(html.find("fill-opacity=\"0.18\" stroke=\"none\"") != std::string::npos);
  CHECK(html.find("\"bars\":true") != std::string::npos);
  CHECK(html.find(">estimate ±σ</text>") != std::string::npos);
  // the combinations the estimate pinned down, from its summary, as a table under its plots
  const auto combos = html.find("Combinations the data pin down, at the end of the run");
  REQUIRE(combos != std::string::npos);
  CHECK(combos > html.find(">estimate: drag</text>"));
  CHECK(html.find("<td>thrust_per_effective_mass</td><td class=\"n\">0.8022</td><td class=\"n\">0.00823</td>",
                  combos) != std::string::npos);
  CHECK(html.find("<td>linear_drag_x_per_effective_mass</td>", combos) != std::string::npos);
  // its batch refits, above the combinations (the error escaped)
  const auto refits = html.find("Batch refits of the trial so far");
  REQUIRE(refits != std::string::npos);
  CHECK(refits < combos);
  CHECK(html.find("11 taken (the last over 110 windows), 1 failed (the last: the trial has 2 usable windows "
                  "&lt;of 50 steps&gt;).",
                  refits) != std::string::npos);
  // and the directions it left weak, with the manoeuvre for each
  CHECK(html.find("<li>&sigma; shrunk 1.4&times;: +0.98 quadratic_drag_y &mdash; sideways motion: turns at several "
                  "speeds (sway)</li>",
                  combos) != std::string::npos);
  CHECK(html.find("<code>0123456789abcdef</code>") != std::string::npos);
  // counts the report computed itself
  CHECK(html.find("40 timeouts, 100 faults.") != std::string::npos);
  CHECK(html.find("140 missed steps in all") != std::string::npos);
  // events, escaped
  CHECK(html.find("faulted: &lt;broker&gt; went away &amp; did not return (policy safe)") != std::string::npos);
  CHECK(html.find("<broker>") == std::string::npos);
  CHECK(html.find("did not finish") == std::string::npos);
  check_self_contained(html);
  for (std::size_t n : path_points(html)) CHECK(n <= 2000);
}

TEST_CASE("long series are down-sampled to the limit per line") {
  const std::string rec = write_synthetic("long.mcap", 1500, true);
  std::string html, error;
  ReportOptions options;
  options.max_points_per_line = 300;
  REQUIRE(render_report(rec, html, &error, options));
  const auto points = path_points(html);
  REQUIRE(points.size() > 10);
  std::size_t most = 0;
  for (std::size_t n : points) {
    CHECK(n <= 300);
    most = std::max(most, n);
  }
  CHECK(most > 200);  // the budget is used, not wasted
}

TEST_CASE("a recording without a summary says the session did not finish") {
  SUBCASE("closed without a summary") {
    const std::string rec = write_synthetic("nosummary.mcap", 400, false);
    std::string html, error;
    REQUIRE(render_report(rec, html, &error));
    CHECK(html.find("session did not finish (truncated)") != std::string::npos);
  }
  SUBCASE("cut short, as after a SIGKILL") {
    const std::string full = read(write_synthetic("tocut.mcap", 1500, true));
    const std::string cut = temp_path("cut.mcap");
    std::ofstream(cut, std::ios::binary).write(full.data(), static_cast<std::streamsize>(full.size() / 2));
    std::string html, error;
    REQUIRE_MESSAGE(render_report(cut, html, &error), error);
    CHECK(html.find("session did not finish (truncated)") != std::string::npos);
    CHECK(html.find("Session did not finish (truncated).</b> The recording ends after step ") != std::string::npos);
    CHECK(count(html, "<svg") >= 10);  // what was flushed is still plotted
    check_self_contained(html);
  }
}

TEST_CASE("write_report writes the file and refuses unreadable input without crashing") {
  const std::string rec = write_synthetic("small.mcap", 200, true);
  const std::string out = temp_path("small.html");
  std::string error;
  REQUIRE(write_report(rec, out, &error));
  const std::string html = read(out);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out + ".tmp"));

  CHECK_FALSE(write_report(temp_path("missing.mcap"), out, &error));
  CHECK(error.find("cannot open") != std::string::npos);
  std::ofstream(temp_path("junk.mcap")) << "this is not a recording at all";
  CHECK_FALSE(write_report(temp_path("junk.mcap"), out, &error));
  CHECK(error.find("not an MCAP file") != std::string::npos);
  CHECK_FALSE(write_report(rec, temp_path("no/such/folder/r.html"), &error));
  CHECK(error.find("cannot write") != std::string::npos);
  CHECK(read(out) == html);  // the old report is untouched
}

namespace {

// runs `sc` with `eps` for `steps`, unpaced, recording to `name` in the temporary folder;
// returns the path
std::string record_session(const Scenario& sc, std::vector<std::unique_ptr<Endpoint>> eps, std::uint64_t steps,
                           const std::string& name) {
  SessionOptions o;
  o.steps = steps;
  o.real_time_factor = 0;
  Session session(sc, std::move(eps), o);
  const std::string path = temp_path(name);
  Recorder recorder(sc, recorder_inputs(session));
  std::string error;
  REQUIRE(recorder.open(path, &error));
  session.set_recorder(&recorder);
  std::atomic<bool> stop{false};
  REQUIRE(session.run(stop) == Outcome::completed);
  REQUIRE(recorder.close(session.summary(), &error));
  return path;
}

// records `steps` of config/scenarios/in_process_depth_hold.yaml (the example control law
// in-process) to `name` in the temporary folder; returns the path
std::string record_depth_hold(const std::string& name, std::uint64_t steps,
                              const std::vector<std::string>& overrides = {}) {
  tether::examples::register_example_controllers();  // the scenario's depth_heading_hold
  Scenario sc = load_scenario(TETHER_SOURCE_DIR + "/config/scenarios/in_process_depth_hold.yaml", overrides);
  std::vector<std::unique_ptr<Endpoint>> eps;
  eps.push_back(std::make_unique<InProcessEndpoint>(sc.endpoints[0], sc.model));
  return record_session(sc, std::move(eps), steps, name);
}

}  // namespace

TEST_CASE("the report of a real session shows the depth goal the controller held") {
  const std::string path = record_depth_hold("default.mcap", 600);
  std::string error;
  std::string html;
  REQUIRE(render_report(path, html, &error));
  // the scenario's goals: depth line (the example controller reports no target of its own)
  CHECK(html.find(">goal</text>") != std::string::npos);
  CHECK(html.find(">target (controller)</text>") == std::string::npos);
  // actuator commands are named from the scenario's device table, one plot per device
  // the example law's commands are smooth (a filtered derivative, a rate limit): a line,
  // not an envelope of a chattering command
  CHECK(html.find(">controller: auv.hull.thruster_vfront</text>") != std::string::npos);
  CHECK(html.find(">controller: auv.hull.thruster_vfront (mean") == std::string::npos);
  CHECK(html.find(">thruster command (fraction -1..1)</text>") != std::string::npos);
  CHECK(html.find("No deadline was missed.") != std::string::npos);
  CHECK(html.find("600 of 600 planned") != std::string::npos);
  check_self_contained(html);
  // the live charts' data: a per-step series gives its times once, as first, step and count
  // (600 steps of 10 ms), then a column of values per series
  CHECK(html.find("\"x\":{\"count\":600,\"first\":0.01,\"step\":0.01}") != std::string::npos);
  CHECK(html.find("\"columns\":[[") != std::string::npos);
  CHECK(html.find("0.030000000000000002") == std::string::npos);

  // /tether/actuators: every step, the four thrusters' last commands, as the controller gave them
  mcap::Reader reader;
  REQUIRE(reader.open(path, &error));
  const mcap::Channel* actuators = nullptr;
  for (const auto& [id, ch] : reader.channels())
    if (ch.topic == "/tether/actuators") actuators = &ch;
  REQUIRE(actuators != nullptr);
  CHECK(actuators->message_encoding == "json");
  REQUIRE(reader.schema(actuators->schema_id) != nullptr);
  CHECK(reader.schema(actuators->schema_id)->name == "tether.Actuators");
  CHECK(reader.schema(actuators->schema_id)->encoding == "jsonschema");
  mcap::MessageView msg;
  std::uint64_t messages = 0;
  std::set<double> vfront;
  while (reader.next(msg)) {
    if (msg.channel_id != actuators->id) continue;
    const auto j = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(msg.data.data()), msg.data.size()));
    CHECK(j["step"] == messages);
    ++messages;
    REQUIRE(j["actuators"].size() == 4);
    std::set<std::string> names;
    for (const auto& a : j["actuators"]) {
      names.insert(a["name"].get<std::string>());
      CHECK(a["value"].get<double>() >= -1.0);
      CHECK(a["value"].get<double>() <= 1.0);
      CHECK(a["values"].size() == 1);
      CHECK(a["values"][0] == a["value"]);
      if (a["name"] == "auv.hull.thruster_vfront") vfront.insert(a["value"].get<double>());
    }
    CHECK(names == std::set<std::string>{"auv.hull.thruster_left", "auv.hull.thruster_right",
                                         "auv.hull.thruster_vfront", "auv.hull.thruster_vrear"});
  }
  CHECK(messages == 600);
  CHECK(vfront.size() > 10);  // the depth controller changes its command as the AUV dives

  // what the controller saw: each sensor's samples on its own channel, as delivered (the
  // depth sensor every step with its noise, the 20 Hz compass every fifth step)
  // and what it did: each thruster's commands on its own channel, as received
  std::map<std::string, std::vector<nlohmann::json>> sensors, commands;
  for (const auto& [id, ch] : reader.channels())
    if (ch.topic.rfind("/devices/", 0) == 0) {
      CHECK(ch.message_encoding == "json");
      REQUIRE(reader.schema(ch.schema_id) != nullptr);
      const std::string& schema = reader.schema(ch.schema_id)->name;
      CHECK((schema == "tether.SensorReading" || schema == "tether.ActuatorCommand"));
      (schema == "tether.SensorReading" ? sensors : commands)[ch.topic];
    }
  CHECK(sensors.size() == 2);
  CHECK(commands.size() == 4);
  REQUIRE(reader.open(path, &error));
  double vehicle_depth = 0;            // the AUV's depth after the last step (the projected state is what is sensed)
  std::vector<double> vfront_by_step;  // from /tether/actuators
  std::vector<nlohmann::json> vehicles, states, endpoint;
  while (reader.next(msg)) {
    if (reader.channel(msg.channel_id)->message_encoding != "json") continue;
    const std::string& topic = reader.channel(msg.channel_id)->topic;
    const auto j = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(msg.data.data()), msg.data.size()));
    if (sensors.count(topic)) sensors[topic].push_back(j);
    if (commands.count(topic)) commands[topic].push_back(j);
    if (topic == "/tether/vehicles") vehicles.push_back(j);
    if (topic == "/vehicles/auv/state") states.push_back(j);
    if (topic == "/endpoints/controller") endpoint.push_back(j);
    if (topic == "/tether/vehicles" && j["step"] == 599) vehicle_depth = j["vehicles"][0]["depth_m"];
    if (topic == "/tether/actuators")
      for (const auto& a : j["actuators"])
        if (a["name"] == "auv.hull.thruster_vfront") vfront_by_step.push_back(a["value"].get<double>());
  }
  // the controller answers every step: one command per thruster per step, the same values
  // /tether/actuators shows
  const auto& vf = commands["/devices/auv/hull/thruster_vfront"];
  REQUIRE(vf.size() == 600);
  REQUIRE(vfront_by_step.size() == 600);
  for (std::size_t k = 0; k < 600; k += 37) {
    CHECK(vf[k]["step"] == k);
    CHECK(vf[k]["endpoint"] == "controller");
    CHECK(vf[k]["value"].get<double>() == vfront_by_step[k]);
  }
  // the vehicle's own topic carries its entry of /tether/vehicles, with the step
  REQUIRE(states.size() == 600);
  REQUIRE(vehicles.size() == 600);
  for (std::size_t k = 0; k < 600; k += 53) {
    nlohmann::json entry = vehicles[k]["vehicles"][0];
    entry["step"] = vehicles[k]["step"];
    CHECK(states[k] == entry);
  }
  // the endpoint's own topic: every reply came in time, so each step applied the reply
  REQUIRE(endpoint.size() == 600);
  CHECK(endpoint[599]["outcome"] == "fresh");
  CHECK(endpoint[599]["action"] == "reply");
  CHECK(endpoint[599]["step"] == 599);
  const auto& depth = sensors["/devices/auv/hull/depth"];
  REQUIRE(depth.size() == 600);
  CHECK(depth[599]["step"] == 599);
  CHECK(depth[599]["valid"] == true);
  REQUIRE(depth[599]["values"].size() == 2);  // depth (m) and absolute pressure (Pa)
  // the mount sits 0.1 m above the centre; the sensor's noise is millimetres
  CHECK(std::abs(depth[599]["value"].get<double>() - (vehicle_depth - 0.1)) < 0.05);
  CHECK(depth[599]["values"][1].get<double>() ==
        doctest::Approx(101325 + 1025 * 9.81 * depth[599]["value"].get<double>()).epsilon(1e-6));
  // every JSON message of the real session uses only keys its channel's schema declares
  REQUIRE(reader.open(path, &error));
  std::set<std::string> checked;
  while (reader.next(msg)) {
    const mcap::Channel* ch = reader.channel(msg.channel_id);
    if (ch->message_encoding != "json") continue;
    const mcap::Schema* schema = ch->schema_id ? reader.schema(ch->schema_id) : nullptr;
    REQUIRE_MESSAGE(schema != nullptr, ch->topic);
    const auto declared = nlohmann::json::parse(schema->data);
    const auto j = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(msg.data.data()), msg.data.size()));
    for (const auto& [key, value] : j.items())
      CHECK_MESSAGE(declared["properties"].contains(key), ch->topic << ": " << key << " is not in " << schema->name);
    checked.insert(ch->topic);
  }
  CHECK(checked.count("/tether/summary") == 1);
  CHECK(checked.count("/tether/timing") == 1);
  const auto& compass = sensors["/devices/auv/hull/compass"];
  CHECK(compass.size() == 120);
  CHECK(compass[1]["step"].get<int>() - compass[0]["step"].get<int>() == 5);
}

TEST_CASE("every sensor the firmware saw is plotted by part with its unit, and each expectation on its own plot") {
  // 800 steps: the 12 s window of "holds 2 m depth" never opens (skipped); the heading band
  // is made too narrow and its window later (--set, recorded as overrides.txt): it fails
  const std::string path =
      record_depth_hold("sensors.mcap", 800, {"expect[1].that=within 0.001 of 90", "expect[1].when=after 4 s"});
  std::string error;
  std::string html;
  REQUIRE(render_report(path, html, &error));
  const auto sensors = html.find("<h2>Sensors</h2>");
  REQUIRE(sensors != std::string::npos);
  const std::string section = html.substr(sensors, html.find("<h2>Commands</h2>") - sensors);
  CHECK(section.find("<h3>auv / hull</h3>") != std::string::npos);
  // the depth sensor's two channels, each on its axis with its unit; the 20 Hz compass
  CHECK(section.find(">depth: depth") != std::string::npos);
  CHECK(section.find(">depth (m)</text>") != std::string::npos);
  CHECK(section.find(">depth: pressure") != std::string::npos);
  CHECK(section.find(">absolute pressure (Pa)</text>") != std::string::npos);
  CHECK(section.find(">compass: heading") != std::string::npos);
  CHECK(section.find("compass, 160 samples") != std::string::npos);
  CHECK(section.find("depth, 800 samples") != std::string::npos);
  // the thrusters are actuators: in Commands, not here
  CHECK(section.find("thruster") == std::string::npos);

  // the expectations: the failed heading band with its first failing step, the passing
  // contact count and the skipped depth window drawn only where a series exists
  const auto fail = html.find(">FAIL: keeps heading east</text>");
  REQUIRE(fail != std::string::npos);
  CHECK(fail < sensors);
  const std::string card = html.substr(fail, html.find("</div>", fail) - fail);
  CHECK(card.find(">allowed</text>") != std::string::npos);
  CHECK(card.find("first failing step ") != std::string::npos);
  // the run's --set (after 4 s), not the file's 3 s: the plot's window is the recorded run's
  CHECK(card.find("from 4.00 s") != std::string::npos);
  CHECK(html.find(">SKIPPED: holds 2 m depth</text>") != std::string::npos);
  // a contact count and an endpoint counter have no series in the recording: no plot
  CHECK(html.find(">PASS: no collision</text>") == std::string::npos);
  CHECK(html.find(">PASS: misses under 5 %</text>") == std::string::npos);
  check_self_contained(html);
}

TEST_CASE("a cable is drawn as a cable: its shape over the run, its tension, and in the vehicle's plan view") {
  const Scenario sc = parse_scenario(R"(name: hanging
world:
  gravity_m_s2: [0, 0, -9.81]
  water: {density_kg_m3: 1000, surface_z_m: 0}
vehicles:
  - name: float
    bodies:
      - name: body
        shape: {type: sphere, radius_m: 0.2}
        mass_kg: 33.51
        damping: {linear: [20, 20, 20]}
        initial: {position_m: [6, 0, -5]}
        devices: [{name: end_load, kind: tension, params: {cable: line}}]
cables:
  - {name: line, from: world, from_anchor_m: [-2, 0, -5], to: float.body, to_anchor_m: [5.8, 0, -5],
     length_m: 10, segments: 10, radius_m: 0.01, mass_per_m_kg: 0.3,
     devices: [{name: load, kind: tension, params: {cable: line}}]}
loop: {period_ms: 10, steps: 300}
endpoints: []
)",
                                     "hanging.yaml");
  REQUIRE(sc.cables.size() == 1);
  const std::string path = record_session(sc, {}, 300, "hanging.mcap");
  std::string error;
  std::string html;
  REQUIRE(render_report(path, html, &error));
  // the cable is not a vehicle: no depth, heading and speed of its first segment
  CHECK(html.find("<h3>float</h3>") != std::string::npos);
  CHECK(html.find("<h3>line</h3>") == std::string::npos);
  CHECK(html.find("<h3>cable line</h3>") != std::string::npos);
  // its shape from above and from the side at the first step, every 50 steps and the last
  CHECK(html.find(">cable line: plan view (x–y)</text>") != std::string::npos);
  CHECK(html.find(">cable line: side view (x–depth)</text>") != std::string::npos);
  CHECK(html.find("segments' centres at 7 times of the run") != std::string::npos);
  CHECK(html.find(">t = 3.0 s</text>") != std::string::npos);
  // in the float's plan view, where it ended
  CHECK(html.find(">cable line at the end</text>") != std::string::npos);
  // its load cell over time
  CHECK(html.find(">cable line: tension</text>") != std::string::npos);
  CHECK(html.find(">line.s0.load</text>") != std::string::npos);
  // and the float's load cell, on the joint that ties the cable's end to it
  CHECK(html.find(">float.body.end_load</text>") != std::string::npos);
  check_self_contained(html);

  // /tether/vehicles gives a cable its nodes (the live page draws the rope from them): every
  // segment, from the anchor's end to the float's; the float has none
  mcap::Reader reader;
  REQUIRE(reader.open(path, &error));
  std::uint32_t vehicles_id = 0;
  for (const auto& [id, ch] : reader.channels())
    if (ch.topic == "/tether/vehicles") vehicles_id = id;
  REQUIRE(vehicles_id != 0);
  mcap::MessageView msg;
  nlohmann::json last;
  std::size_t with_nodes = 0;
  while (reader.next(msg)) {
    if (msg.channel_id != vehicles_id) continue;
    last = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(msg.data.data()), msg.data.size()));
    with_nodes += last["vehicles"][1].contains("nodes") ? 1 : 0;
  }
  CHECK(with_nodes == 300);
  REQUIRE(last["vehicles"].size() == 2);
  CHECK(last["vehicles"][0]["name"] == "float");
  CHECK_FALSE(last["vehicles"][0].contains("nodes"));
  CHECK(last["vehicles"][1]["name"] == "line");
  const auto& nodes = last["vehicles"][1]["nodes"];
  REQUIRE(nodes.size() == 10);
  CHECK(nodes[0][0].get<double>() < nodes[9][0].get<double>());  // from the anchor (x = -2) towards the float (x = 6)
  CHECK(nodes[0][0].get<double>() > -2.0);
  CHECK(nodes[9][0].get<double>() < 6.0);
  CHECK(last["vehicles"][1]["x_m"] == nodes[0][0]);  // the cable's own position is its first segment's
}

TEST_CASE("down-sampling keeps spikes, gaps and both ends") {
  std::vector<double> x(100'000), y(100'000);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<double>(i);
    y[i] = std::sin(static_cast<double>(i) * 1e-3);
  }
  y[31'337] = 50;   // one spike up
  y[77'777] = -40;  // one down
  for (std::size_t i = 60'000; i < 60'010; ++i) y[i] = std::nan("");
  const auto keep = svg::downsample(x, y, 2000, false);
  CHECK(keep.size() <= 2000);
  CHECK(keep.size() > 1500);
  CHECK(std::is_sorted(keep.begin(), keep.end()));
  CHECK(std::find(keep.begin(), keep.end(), 31'337) != keep.end());
  CHECK(std::find(keep.begin(), keep.end(), 77'777) != keep.end());
  CHECK(keep.front() == 0);
  CHECK(keep.back() == 99'999);
  CHECK(std::find(keep.begin(), keep.end(), 59'999) != keep.end());  // the run before the gap ends there
  CHECK(std::find(keep.begin(), keep.end(), 60'010) != keep.end());  // the next one starts here
  for (std::size_t i : keep) CHECK(std::isfinite(y[i]));

  // a short series is kept whole; many separate points are thinned to the limit
  CHECK(svg::downsample(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6}, 2000, false).size() == 3);
  std::vector<double> sparse(10'000, std::nan(""));
  for (std::size_t i = 0; i < sparse.size(); i += 2) sparse[i] = 1;
  CHECK(svg::downsample(x, sparse, 1000, false).size() <= 1000);
  // a path keeps its x extremes too
  std::vector<double> px(10'000), py(10'000, 0.0);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = std::sin(static_cast<double>(i) * 0.01);
  px[4321] = 9;
  const auto kp = svg::downsample(px, py, 200, true);
  CHECK(kp.size() <= 200);
  CHECK(std::find(kp.begin(), kp.end(), 4321) != kp.end());
}

TEST_CASE("a chattering command becomes its mean in a min-max envelope, and a smooth line keeps its points") {
  // 1,500 steps of a command swinging between 0.46 and 1.0 every step (the example firmware's
  // vertical thrusters), drawn as steps: a solid band of ink before
  svg::Line chatter;
  for (int i = 0; i < 1500; ++i) {
    chatter.x.push_back(i * 0.01);
    chatter.y.push_back(i % 2 ? 1.0 : 0.46);
  }
  chatter.step = true;
  REQUIRE(svg::make_envelope(chatter, 500));
  REQUIRE(chatter.y.size() == 500);
  REQUIRE(chatter.low.size() == 500);
  REQUIRE(chatter.high.size() == 500);
  CHECK_FALSE(chatter.step);
  for (std::size_t b = 0; b < 500; ++b) {
    CHECK(chatter.low[b] == 0.46);
    CHECK(chatter.high[b] == 1.0);
    CHECK(chatter.y[b] == doctest::Approx(0.73).epsilon(0.2));  // 3 samples a bucket: 2 of one, 1 of the other
  }
  svg::Plot plot;
  plot.title = "thruster";
  plot.lines.push_back(chatter);
  const std::string drawn = svg::render(plot);
  CHECK(drawn.find("class=\"envelope\"") != std::string::npos);

  // a slow sine, a short series, a constant: kept as they are
  svg::Line smooth;
  for (int i = 0; i < 1500; ++i) {
    smooth.x.push_back(i * 0.01);
    smooth.y.push_back(std::sin(i * 0.002));
  }
  CHECK_FALSE(svg::make_envelope(smooth, 500));
  CHECK(smooth.y.size() == 1500);
  CHECK(smooth.low.empty());
  svg::Line short_line;
  short_line.x = {0, 1, 2};
  short_line.y = {0, 1, 0};
  CHECK_FALSE(svg::make_envelope(short_line, 500));
  svg::Line flat;
  flat.x.assign(1500, 0.0);
  flat.y.assign(1500, 0.5);
  for (int i = 0; i < 1500; ++i) flat.x[static_cast<std::size_t>(i)] = i;
  CHECK_FALSE(svg::make_envelope(flat, 500));
}

namespace {

// the `d` of each drawn line of an SVG, in order
std::vector<std::string> path_ds(const std::string& svg_text) {
  std::vector<std::string> out;
  const std::string open = "<path d=\"";
  for (auto at = svg_text.find(open); at != std::string::npos; at = svg_text.find(open, at + 1)) {
    const auto begin = at + open.size();
    out.push_back(svg_text.substr(begin, svg_text.find('"', begin) - begin));
  }
  return out;
}

// a path's vertices in absolute pixels (M absolute, then l, h, v relative), and its commands
std::pair<std::vector<std::array<double, 2>>, std::string> path_vertices(const std::string& d) {
  std::vector<std::array<double, 2>> at;
  std::string commands;
  const char* p = d.c_str();
  const auto number = [&p] {
    while (*p == ' ' || *p == ',') ++p;
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    REQUIRE(end != p);
    p = end;
    return v;
  };
  while (*p != '\0') {
    const char c = *p++;
    commands += c;
    std::array<double, 2> next = at.empty() ? std::array<double, 2>{0, 0} : at.back();
    if (c == 'M') {
      next[0] = number();
      next[1] = number();
    } else if (c == 'l') {
      next[0] += number();
      next[1] += number();
    } else if (c == 'h') {
      next[0] += number();
    } else if (c == 'v') {
      next[1] += number();
    } else {
      REQUIRE_MESSAGE(c == 'Z', d);
      continue;
    }
    at.push_back(next);
  }
  return {at, commands};
}
std::string path_commands(const std::string& d) { return path_vertices(d).second; }

// how far p is from the polyline
double off_polyline(const std::array<double, 2>& p, const std::vector<std::array<double, 2>>& line) {
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i + 1 < line.size(); ++i) {
    const auto &a = line[i], &b = line[i + 1];
    const double dx = b[0] - a[0], dy = b[1] - a[1], len2 = dx * dx + dy * dy;
    const double t = len2 > 0 ? std::clamp(((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len2, 0.0, 1.0) : 0.0;
    best = std::min(best, std::hypot(p[0] - a[0] - t * dx, p[1] - a[1] - t * dy));
  }
  return best;
}

}  // namespace

TEST_CASE("a drawn line is as short as the picture allows and ends where its points do") {
  svg::Plot plot;
  plot.y_min = -1.5;
  plot.y_max = 1.5;
  svg::Line wave, ends, flat, back, step;
  for (int i = 0; i <= 400; ++i) {
    wave.x.push_back(i * 0.025);
    wave.y.push_back(std::sin(i * 0.05));
    flat.x.push_back(i * 0.025);
    flat.y.push_back(1.0);
  }
  ends.x = {wave.x.front(), wave.x.back()};
  ends.y = {wave.y.front(), wave.y.back()};
  back.x = {0, 5, 2};  // goes out and turns back on one height: the turning point stays
  back.y = {-1, -1, -1};
  step.x = {0, 1, 2, 3, 4, 5, 6};
  step.y = {0, 0, 0, 0.5, 0.5, 0.5, 0};
  step.step = true;
  for (svg::Line* l : {&wave, &ends, &flat, &back, &step}) plot.lines.push_back(*l);
  const auto ds = path_ds(svg::render(plot));
  REQUIRE(ds.size() == 5);
  // relative steps of rounded points end exactly where the two-point line does: no error adds up
  const auto [wave_at, wave_commands] = path_vertices(ds[0]);
  const auto [ends_at, ends_commands] = path_vertices(ds[1]);
  REQUIRE(ends_at.size() == 2);
  CHECK(ends_commands == "Ml");
  CHECK(wave_at.back()[0] == doctest::Approx(ends_at.back()[0]).epsilon(1e-9));
  CHECK(wave_at.back()[1] == doctest::Approx(ends_at.back()[1]).epsilon(1e-9));
  // the wave simplified: far fewer vertices than samples, yet every sample within 0.2 px (and
  // the rounding to 0.1 px) of the line drawn; the pixel scale from the two-point line
  CHECK(wave_at.size() < wave.x.size() / 3);
  CHECK(wave_at.size() > 20);
  const double sx = (ends_at[1][0] - ends_at[0][0]) / (ends.x[1] - ends.x[0]);
  const double sy = (ends_at[1][1] - ends_at[0][1]) / (ends.y[1] - ends.y[0]);
  double worst = 0;
  for (std::size_t i = 0; i < wave.x.size(); ++i)
    worst = std::max(worst, off_polyline({ends_at[0][0] + sx * (wave.x[i] - ends.x[0]),
                                          ends_at[0][1] + sy * (wave.y[i] - ends.y[0])},
                                         wave_at));
  CHECK(worst < 0.35);
  // 401 points on one height are one segment
  CHECK(path_commands(ds[2]) == "Mh");
  // out and back: both segments kept
  CHECK(path_commands(ds[3]) == "Mhh");
  // a step line: across, up, across, down (at the last point); the repeated values merge
  CHECK(path_commands(ds[4]) == "Mhvhv");
}

TEST_CASE("ticks are round numbers and their labels have the decimals they need") {
  CHECK(svg::nice_ticks(0, 1, 5) == std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1});
  CHECK(svg::nice_ticks(-3.2, 3.3, 6) == std::vector<double>{-3, -2, -1, 0, 1, 2, 3});
  CHECK(svg::nice_ticks(1, 1, 5).empty());
  CHECK(svg::format_tick(0.6000000000000001, 0.2) == "0.6");
  CHECK(svg::format_tick(-2, 1) == "-2");
  CHECK(svg::format_tick(2.5e-5, 1e-5) == "2.5e-05");
  CHECK(svg::format_tick(0, 0.5) == "0");
  CHECK(svg::escape("<a href='x'>&\"") == "&lt;a href=&#39;x&#39;&gt;&amp;&quot;");
}

TEST_CASE("a plot renders axes, legend and no-data without data") {
  svg::Plot p;
  p.title = "empty";
  p.x_label = "t (s)";
  p.y_label = "v";
  const std::string s = svg::render(p);
  CHECK(s.rfind("<svg", 0) == 0);
  CHECK(s.find(">no data</text>") != std::string::npos);
  CHECK(s.find("xmlns") == std::string::npos);
  p.lines.push_back(svg::Line{"one", {0, 1, 2}, {1, 2, std::nan("")}, "#123456"});
  p.bars.push_back(svg::Bars{"bars", {0, 1, 2}, {3, 4}, "#654321"});
  const std::string t = svg::render(p);
  CHECK(t.find(">no data</text>") == std::string::npos);
  CHECK(t.find(">one</text>") != std::string::npos);
  CHECK(t.find(">bars</text>") != std::string::npos);
  CHECK(count(t, "<rect x=") >= 4);  // background, two bars, frame
}

TEST_CASE("every JSON message the recorder writes parses and has the documented fields") {
  const std::string path = write_synthetic("json.mcap", 300, true);
  mcap::Reader reader;
  std::string error;
  REQUIRE(reader.open(path, &error));
  std::map<std::string, int> seen;
  mcap::MessageView msg;
  while (reader.next(msg)) {
    const mcap::Channel* ch = reader.channel(msg.channel_id);
    REQUIRE(ch != nullptr);
    if (ch->message_encoding != "json") continue;
    const std::string text(reinterpret_cast<const char*>(msg.data.data()), msg.data.size());
    const auto j = nlohmann::json::parse(text, nullptr, false);
    REQUIRE_MESSAGE(j.is_object(), std::string(ch->topic + ": " + text));
    ++seen[ch->topic];
    // every JSON channel has a JSON schema, and its messages use only the keys it declares
    const mcap::Schema* schema = ch->schema_id ? reader.schema(ch->schema_id) : nullptr;
    REQUIRE_MESSAGE(schema != nullptr, ch->topic);
    CHECK_MESSAGE(schema->encoding == "jsonschema", ch->topic);
    const auto declared = nlohmann::json::parse(schema->data, nullptr, false);
    REQUIRE_MESSAGE(declared.is_object(), ch->topic);
    for (const auto& [key, value] : j.items())
      CHECK_MESSAGE(declared["properties"].contains(key), ch->topic << ": " << key << " is not in " << schema->name);
    if (ch->topic == "/tether/vehicles") {
      CHECK(j["step"].is_number_unsigned());
      const auto& v = j["vehicles"].at(0);
      CHECK(v["name"] == "auv");
      for (const char* k :
           {"x_m", "y_m", "z_m", "depth_m", "heading_deg", "yaw_deg", "roll_deg", "pitch_deg", "speed_m_s"})
        CHECK_MESSAGE(v[k].is_number(), k);
      // a compass heading: clockwise from north, so yaw 0 (east) is 90
      const double compass = std::fmod(90.0 - v["yaw_deg"].get<double>() + 720.0, 360.0);
      CHECK(v["heading_deg"].get<double>() == doctest::Approx(compass));
      CHECK(v["projected"]["z_m"].is_number());
      CHECK(v.contains("measured") == (j["step"].get<int>() % 2 == 0));
      CHECK(v["depth_m"].get<double>() == doctest::Approx(-v["z_m"].get<double>()));
    } else if (ch->topic == "/tether/timing") {
      CHECK(j["step_time_ns"].is_number_unsigned());
      REQUIRE(j["endpoints"].size() == 2);
      CHECK(j["endpoints"][1]["name"] == "tank");
      CHECK(j["endpoints"][0]["round_trip_ns"].is_number_unsigned());
      const std::string outcome = j["endpoints"][1]["outcome"];
      CHECK((outcome == "fresh" || outcome == "timeout" || outcome == "fault"));
    } else if (ch->topic == "/tether/feedback") {
      CHECK(j["processors"]["kalman"]["gain"].is_number());
      CHECK(j["processors"]["kalman"]["innovation_m"].is_number());
      CHECK(j["processors"]["estimate"]["drag"].is_number());
    } else if (ch->topic == "/tf") {
      CHECK(j["parent_frame_id"] == "world");
      CHECK(j["child_frame_id"] == "auv");
      CHECK(j["timestamp"]["sec"].is_number_integer());
      CHECK(j["rotation"]["w"].is_number());
      // the rotation is exactly the state's, not a rounded copy
      CHECK(std::abs(j["rotation"]["w"].get<double>()) <= 1.0);
    } else if (ch->topic == "/vehicles/auv/state") {
      CHECK(j["name"] == "auv");
      CHECK(j["step"].is_number_unsigned());
      CHECK(j["depth_m"].get<double>() == doctest::Approx(-j["z_m"].get<double>()));
    } else if (ch->topic == "/endpoints/tank") {
      // what the loop applied: the reply when fresh, else the endpoint's policy (safe)
      const int k = j["step"];
      const std::string want = k >= 1400 ? "fault" : (k >= 500 && k < 540) ? "timeout" : "fresh";
      CHECK(j["outcome"] == want);
      CHECK(j["action"] == (want == "fresh" ? "reply" : "safe"));
      CHECK((want == "fresh") == (j["round_trip_ns"].get<std::uint64_t>() > 0));
    } else if (ch->topic == "/endpoints/ctl") {
      CHECK(j["action"] == "reply");
    } else if (ch->topic == "/feedback/kalman") {
      // the same figures as /tether/feedback, by name and without an index
      const double t = j["step"].get<int>() * 0.01;
      CHECK(j["gain"].get<double>() == doctest::Approx(0.5 + 0.4 * std::exp(-t)));
      CHECK(j["innovation_m"].is_number());
      CHECK(j.size() == 3);
    } else if (ch->topic == "/feedback/estimate") {
      CHECK(j["drag"].is_number());
    } else if (ch->topic.rfind("/vehicles/auv/", 0) == 0) {
      CHECK(j["frame_id"] == "world");
      CHECK(j["pose"]["position"]["x"].is_number());
      CHECK(j["pose"]["orientation"]["w"].is_number());
      CHECK(j["timestamp"]["nsec"].is_number_integer());
    }
  }
  CHECK(reader.error().empty());
  CHECK(seen["/tether/vehicles"] == 300);
  CHECK(seen["/tether/timing"] == 300);
  CHECK(seen["/tether/feedback"] == 300);
  CHECK(seen["/tf"] == 300);
  CHECK(seen["/vehicles/auv/pose"] == 300);
  CHECK(seen["/vehicles/auv/projected"] == 300);
  CHECK(seen["/vehicles/auv/measured"] == 150);
  CHECK(seen["/tether/summary"] == 1);
  CHECK(seen["/scene"] == 1);
  CHECK(seen["/vehicles/auv/state"] == 300);
  CHECK(seen["/endpoints/tank"] == 300);
  CHECK(seen["/endpoints/ctl"] == 300);
  CHECK(seen["/feedback/kalman"] == 300);
  CHECK(seen["/feedback/estimate"] == 300);
}

TEST_CASE("a GPS at the surface gives its fixes as foxglove.LocationFix, the same position as its readings") {
  const Scenario sc = parse_scenario(R"(name: gps_fix
world:
  gravity_m_s2: [0, 0, -9.81]
  water: {density_kg_m3: 1025, surface_z_m: 0}
vehicles:
  - name: boat
    bodies:
      - name: hull
        shape: {type: box, size_m: [1, 0.5, 0.3]}
        mass_kg: 20
        initial: {position_m: [30, -40, 0], velocity_m_s: [1, 0.5, 0]}
        devices:
          - {name: gps, kind: gps, mount: {position_m: [0, 0, 0.3]}, rate_hz: 10,
             params: {datum_lat_deg: 43.07, datum_lon_deg: -70.71, surface_tolerance_m: 1.0}}
loop: {period_ms: 10, steps: 100}
endpoints: []
)",
                                     "gps_fix.yaml");
  const std::string path = record_session(sc, {}, 100, "gps_fix.mcap");
  std::string error;
  mcap::Reader reader;
  REQUIRE(reader.open(path, &error));
  std::map<std::string, std::vector<nlohmann::json>> by_topic;
  mcap::MessageView msg;
  while (reader.next(msg)) {
    const mcap::Channel* ch = reader.channel(msg.channel_id);
    if (ch->topic == "/devices/boat/hull/gps/fix") {
      CHECK(reader.schema(ch->schema_id)->name == "foxglove.LocationFix");
      CHECK(reader.schema(ch->schema_id)->data == foxglove_schema("foxglove.LocationFix"));
    }
    if (ch->message_encoding != "json") continue;
    by_topic[ch->topic].push_back(
        nlohmann::json::parse(std::string(reinterpret_cast<const char*>(msg.data.data()), msg.data.size())));
  }
  const auto& readings = by_topic["/devices/boat/hull/gps"];
  const auto& fixes = by_topic["/devices/boat/hull/gps/fix"];
  REQUIRE(readings.size() == 10);  // 10 Hz for 1 s
  std::size_t valid = 0;
  for (const auto& r : readings) valid += r["valid"].get<bool>();
  REQUIRE(valid > 0);
  REQUIRE(fixes.size() == valid);  // a fix per valid reading, none without one
  std::size_t f = 0;
  for (const auto& r : readings) {
    if (!r["valid"].get<bool>()) continue;
    const auto& fix = fixes[f++];
    const tether::hal::GeoPoint want = tether::hal::local_to_geodetic(
        43.07, -70.71, 0, r["values"][0].get<double>(), r["values"][1].get<double>(), r["values"][2].get<double>());
    CHECK(fix["latitude"].get<double>() == want.lat_deg);
    CHECK(fix["longitude"].get<double>() == want.lon_deg);
    CHECK(fix["altitude"].get<double>() == want.alt_m);
    CHECK(fix["frame_id"] == "boat");
    CHECK(fix["position_covariance"].size() == 9);
    CHECK(fix["position_covariance_type"] == 0);
  }
  // 30 m east and 40 m south of the datum: north of the datum is a larger latitude
  CHECK(fixes[0]["latitude"].get<double>() < 43.07);
  CHECK(fixes[0]["longitude"].get<double>() > -70.71);
}

TEST_CASE("a writer held up by one message does not cost the loop a keyframe while the ring has room") {
  // a tap that holds the writer thread inside its first message once armed: the writer is
  // busy (as with a chunk to compress) while the loop goes on pushing steps and keyframes
  struct Gate final : RecorderTap {
    std::mutex m;
    std::condition_variable cv;
    bool armed = false, held = false, released = false;
    bool wants(std::uint16_t) const override { return true; }
    void message(std::uint16_t, std::uint64_t, std::string_view) override {
      std::unique_lock lock(m);
      if (!armed || released) return;
      held = true;
      cv.notify_all();
      cv.wait(lock, [&] { return released; });
    }
  } gate;
  Scenario sc = parse_scenario(scenario_text, "circles.yaml");
  Recorder rec(sc, {"ctl"}, {});
  rec.set_tap(&gate);
  std::string error;
  REQUIRE(rec.open_without_file(&error));
  const auto push_step = [&](std::uint64_t k) {
    Recorder::StepItem& item = rec.step_staging();
    item.record.step = k;
    item.record.time_ns = static_cast<std::int64_t>(k) * sc.loop.period_ns;
    item.actual = sc.initial;
    item.projected = sc.initial;
    item.values.clear();
    item.sensors.clear();
    rec.push(Recorder::ItemKind::step, k, item.record.time_ns);
  };
  {
    std::lock_guard lock(gate.m);
    gate.armed = true;
  }
  push_step(0);
  {
    std::unique_lock lock(gate.m);
    gate.cv.wait(lock, [&] { return gate.held; });
  }
  // a paced loop (no waiting when full): a keyframe that finds no free buffer is dropped.
  // 20 keyframes 100 steps apart fit the default ring (4096 items); they used to have 4
  // buffers between them, so the fifth was dropped while the writer was busy
  const std::uint64_t every = sc.recording.keyframe_every_steps;
  REQUIRE(20 * (every + 1) < sc.recording.queue_slots);
  int keyframes = 0;
  for (std::uint64_t k = 1; k <= 20 * every; ++k) {
    push_step(k);
    if (k % every != 0) continue;
    std::string* buffer = rec.keyframe_buffer();
    CHECK(buffer != nullptr);
    if (!buffer) continue;
    buffer->assign("keyframe");
    rec.push_keyframe(buffer, k, static_cast<std::int64_t>(k) * sc.loop.period_ns);
    ++keyframes;
  }
  CHECK(keyframes == 20);
  CHECK(rec.dropped() == 0);
  {
    std::lock_guard lock(gate.m);
    gate.released = true;
  }
  gate.cv.notify_all();
  REQUIRE(rec.close(nlohmann::json::object(), &error));
  CHECK(rec.dropped() == 0);
  CHECK(rec.items_written() >= 20 * every + 1 + 20);
}

TEST_CASE("names with quotes and control characters are escaped in the JSON channels") {
  Scenario sc = parse_scenario(scenario_text, "circles.yaml");
  const std::string path = temp_path("names.mcap");
  {
    Recorder rec(sc, {"a \"quoted\"\tname\\"}, {});
    std::string error;
    REQUIRE(rec.open(path, &error));
    StepRecord r;
    r.slots.resize(1);
    Recorder::StepItem& item = rec.step_staging();
    item.record = r;
    item.actual = sc.initial;
    item.projected = sc.initial;
    rec.push(Recorder::ItemKind::step, 0, 0);
    REQUIRE(rec.close(nlohmann::json::object(), &error));
  }
  mcap::Reader reader;
  std::string error;
  REQUIRE(reader.open(path, &error));
  mcap::MessageView msg;
  bool found = false;
  while (reader.next(msg))
    if (reader.channel(msg.channel_id)->topic == "/tether/timing") {
      const auto j =
          nlohmann::json::parse(std::string(reinterpret_cast<const char*>(msg.data.data()), msg.data.size()));
      CHECK(j["endpoints"][0]["name"] == "a \"quoted\"\tname\\");
      found = true;
    }
  CHECK(found);
}

TEST_CASE(
    "the scene draws the tank at its true size and the terrain as triangles, and the file has a wall-clock "
    "anchor") {
  const Scenario sc = load_scenario(TETHER_SOURCE_DIR + "/config/scenarios/tank_obstacles.yaml");
  const std::string path = temp_path("scene.mcap");
  const auto before = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  {
    Recorder rec(sc, {}, {});
    std::string error;
    REQUIRE_MESSAGE(rec.open(path, &error), error);
    REQUIRE(rec.close(nlohmann::json::object(), &error));
  }
  mcap::Reader reader;
  std::string error;
  REQUIRE(reader.open(path, &error));
  // the anchor: when the recording opened, in ns and as UTC text, and the simulation start
  const mcap::Metadata* meta = nullptr;
  for (const auto& m : reader.metadata())
    if (m.name == "tether") meta = &m;
  REQUIRE(meta != nullptr);
  const std::uint64_t wall = std::stoull(meta->entries.at("wall_clock_start_ns"));
  CHECK(wall >= before);
  CHECK(wall < before + 60'000'000'000ull);
  const std::string utc = meta->entries.at("wall_clock_start_utc");
  CHECK(utc.size() == 30);
  CHECK(utc.back() == 'Z');
  CHECK(utc.substr(20, 9) == meta->entries.at("wall_clock_start_ns").substr(10, 9));  // the same nanoseconds
  CHECK(meta->entries.at("sim_time_start_ns") == "0");

  mcap::MessageView msg;
  nlohmann::json scene;
  while (reader.next(msg))
    if (reader.channel(msg.channel_id)->topic == "/scene")
      scene = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(msg.data.data()), msg.data.size()));
  REQUIRE(scene.is_object());
  const nlohmann::json* tank = nullptr;
  const nlohmann::json* water = nullptr;
  for (const auto& e : scene["entities"]) {
    if (e["id"] == "static") tank = &e;
    if (e["id"] == "water_surface") water = &e;
  }
  REQUIRE(tank != nullptr);
  REQUIRE(water != nullptr);
  // the tank is 30 x 12 m, its floor at -8 m, open at the top up to the surface at 0
  auto near = [](const nlohmann::json& v, double x, double y, double z) {
    return std::abs(v["x"].get<double>() - x) < 1e-6 && std::abs(v["y"].get<double>() - y) < 1e-6 &&
           std::abs(v["z"].get<double>() - z) < 1e-6;
  };
  int floors = 0, long_walls = 0, end_walls = 0;
  for (const auto& c : (*tank)["cubes"]) {
    const auto& size = c["size"];
    const auto& p = c["pose"]["position"];
    if (near(size, 30, 12, 0.02) && std::abs(p["z"].get<double>() + 8.01) < 1e-6) ++floors;
    // walls: their slab's local x and y map to the world's z (8 m) and the wall's length
    if ((near(size, 8, 30, 0.02) || near(size, 30, 8, 0.02)) && std::abs(std::abs(p["y"].get<double>()) - 6.01) < 1e-6)
      ++long_walls;
    if ((near(size, 8, 12, 0.02) || near(size, 12, 8, 0.02)) && std::abs(std::abs(p["x"].get<double>()) - 15.01) < 1e-6)
      ++end_walls;
  }
  CHECK(floors == 1);
  CHECK(long_walls == 2);
  CHECK(end_walls == 2);
  CHECK(near((*water)["cubes"][0]["size"], 30, 12, 0.001));
  // the seabed: 31 x 13 vertices (30 x 12 m at 1 m), two triangles per cell, its heights
  REQUIRE((*tank)["triangles"].size() == 1);
  const auto& seabed = (*tank)["triangles"][0];
  CHECK(seabed["points"].size() == 31 * 13);
  CHECK(seabed["indices"].size() == 30 * 12 * 6);
  CHECK(near(seabed["pose"]["position"], -15, -6, -6));
  CHECK(near(seabed["points"][30], 30, 0, 1.5));  // the east end of the first row, 1.5 m up
  for (const auto& i : seabed["indices"]) CHECK(i.get<std::size_t>() < 31 * 13);
}

namespace {

// tests/live_node/report_page.mjs on some pages: its exit code and output (3: no Chromium)
int check_pages(const std::string& args, std::string& out) {
  const std::string cmd = "TETHER_BINARY_DIR=" + TETHER_BINARY_DIR + " bash " + TETHER_SOURCE_DIR +
                          "/tests/live_node/run.sh report_page.mjs " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool chromium_available() {
  return std::getenv("TETHER_SKIP_NODE_VALIDATION") == nullptr &&
         std::system("command -v node >/dev/null && command -v npm >/dev/null && command -v chromium >/dev/null") == 0;
}

}  // namespace

TEST_CASE(
    "reports and plots render in headless Chromium: no script error, every plot drawn, no page stylesheet needed") {
  if (!chromium_available()) {
    MESSAGE("node, npm or chromium not found (or TETHER_SKIP_NODE_VALIDATION set): skipping the browser check");
    return;
  }
  const std::string shots = TETHER_BINARY_DIR + "/test_output/screenshots";
  std::filesystem::create_directories(shots);
  // a long synthetic session (misses, faults, feedback, commands) and a real one
  std::string error;
  const std::string synthetic = temp_path("browser_synthetic.html");
  REQUIRE(write_report(write_synthetic("browser_synthetic.mcap", 1500, true), synthetic, &error));
  const std::string rec = record_depth_hold("browser_depth_hold.mcap", 1500);
  const std::string real = temp_path("browser_depth_hold.html");
  REQUIRE(write_report(rec, real, &error));
  // plots alone in a page without the report's stylesheet, as bench/correction writes them
  svg::Plot plot;
  plot.title = "bare page";
  plot.x_label = "x";
  plot.y_label = "y";
  svg::Line l;
  l.x = {0, 1, 2, 3};
  l.y = {1, 0.5, 0.8, 0.2};
  l.step = true;
  plot.lines.push_back(l);
  const std::string bare = temp_path("browser_bare_plot.html");
  std::ofstream(bare) << "<!doctype html><html><head><meta charset=\"utf-8\"><title>bare</title></head><body>"
                      << svg::render(plot) << "</body></html>";

  std::string out;
  const int code = check_pages("--screenshots " + shots + " --min-plots 1 " + synthetic + " " + real + " " + bare, out);
  INFO(out);
  REQUIRE(code != 3);
  CHECK(code == 0);
  CHECK(out.find("\"plots\":0") == std::string::npos);
  CHECK(std::filesystem::exists(shots + "/browser_depth_hold.png"));
  // the verdict comes first, before the summary table
  const std::string html = read(real);
  // the controller's chattering thruster commands are drawn as envelopes, in SVG and dygraphs
  CHECK(html.find("thruster_vfront (mean; band: least to most per") != std::string::npos);
  CHECK(html.find("class=\"envelope\"") != std::string::npos);
  CHECK(html.find("\"custom\":true") != std::string::npos);
  CHECK(html.find("PASS</b>") < html.find("<h2>Summary</h2>"));

  // and the check fails a page that a reader would see broken: a script error, a request
  // outside the file, a plot whose frame relies on a stylesheet the page lacks
  const std::string broken = temp_path("browser_broken.html");
  std::ofstream(broken)
      << "<!doctype html><html><head><title>broken</title></head><body>"
      << "<svg class=\"plot\" width=\"200\" height=\"100\"><text>a</text><text>b</text><text>c</text>"
      << "<path d=\"M0 0L10 10\"/><rect class=\"frame\" x=\"10\" y=\"10\" width=\"100\" height=\"50\"/>"
      << "</svg><img src=\"http://127.0.0.1:9/x.png\"><script>undefined_function();</script>"
      << "</body></html>";
  std::string bad_out;
  CHECK(check_pages(broken, bad_out) == 1);
  CHECK(bad_out.find("script error") != std::string::npos);
  CHECK(bad_out.find("request outside the page") != std::string::npos);
  CHECK(bad_out.find("filled frame") != std::string::npos);
}

TEST_CASE("tether report A B compares two runs: their figures side by side, their series overlaid") {
  const std::string a = record_depth_hold("compare_a.mcap", 600);
  const std::string b = record_depth_hold("compare_b.mcap", 300);
  ReportOptions options;
  options.compare = b;
  std::string html, error;
  REQUIRE(render_report(a, html, &error, options));
  CHECK(html.find("<h2>Comparison: A and B</h2>") < html.find("<h2>Summary</h2>"));
  CHECK(html.find("<code>" + svg::escape(b) + "</code>") != std::string::npos);
  CHECK(html.find("<tr><th>steps</th><td>600</td><td>300</td></tr>") != std::string::npos);
  CHECK(html.find("<tr><th>endpoint controller: fresh / misses</th><td>600 / 0</td><td>300 / 0</td></tr>") !=
        std::string::npos);
  for (const char* title :
       {"Depth over time, A and B", "Heading over time, A and B", "Speed over time, A and B", "Step time, A and B"})
    CHECK_MESSAGE(html.find(std::string(">") + title + "</text>") != std::string::npos, title);
  CHECK(html.find(">auv A</text>") != std::string::npos);
  CHECK(html.find(">auv B</text>") != std::string::npos);
  // without B the page has no comparison; a B that is not a recording is an error
  REQUIRE(render_report(a, html, &error));
  CHECK(html.find("Comparison") == std::string::npos);
  options.compare = temp_path("no_such.mcap");
  CHECK_FALSE(render_report(a, html, &error, options));
  CHECK(error.find("no_such.mcap") != std::string::npos);

  // as a user runs it
  const std::string out = temp_path("compare.html");
  std::string cli;
  FILE* pipe =
      popen((std::string(TETHER_BINARY_DIR + "/tether report ") + a + " " + b + " -o " + out + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[512];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) cli.append(buf, n);
  CHECK(pclose(pipe) == 0);
  CHECK(cli == "report: " + out + "\n");
  CHECK(read(out).find("<h2>Comparison: A and B</h2>") != std::string::npos);
  if (chromium_available()) {
    std::string page_out;
    CHECK_MESSAGE(check_pages("--min-plots 10 " + out, page_out) == 0, page_out);
  }
}
