// SPDX-License-Identifier: Apache-2.0
// A template live service: copy this file to start one (docs/extending.md, "A live service").
//
// `/example/nudge` pushes a body horizontally towards a compass heading for a while:
// {"body": "auv", "newtons": 20, "heading_deg": 90, "duration_s": 1}. Adding it is one row
// in the service table — its name, its request's keys (checked strictly before the handler
// runs: an unknown key, a missing required one or a value out of range is answered with what
// is wrong) and its handler, which says what the session is asked. Here that is an operator
// command the session already knows (a force), so it is recorded and replayed like one. A
// built-in service gets its row in adapters/live/src/services.cpp instead.
//
// main() then serves a session live, calls the service as a client would, and checks that the
// body went the way it was pushed (CTest runs this program).
#include <atomic>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "tether/live/client.hpp"
#include "tether/live/server.hpp"
#include "tether/live/services.hpp"
#include "tether/loop/session.hpp"

using namespace tether;
using nlohmann::json;

namespace {

// the table row
live::Service nudge_service() {
  live::Service s;
  s.name = "/example/nudge";
  s.type = "example/Nudge";
  s.description = "pushes a body horizontally towards a compass heading, from the next step";
  // the request's keys: name, type, required or not, range (inclusive), description
  auto key = [](const char* name, live::KeyType type, bool required, double min, double max, const char* what) {
    live::RequestKey k;
    k.name = name;
    k.type = type;
    k.required = required;
    k.min = min;
    k.max = max;
    k.description = what;
    return k;
  };
  s.keys = {key("body", live::KeyType::string, true, 0, 0, "\"vehicle.part\", or \"vehicle\" for its first body"),
            key("newtons", live::KeyType::number, true, 0, 1000, "how hard (N)"),
            key("heading_deg", live::KeyType::number, true, 0, 360, "towards where: clockwise from north"),
            key("duration_s", live::KeyType::number, false, 0.01, 60, "for how long (s of simulation; default 1)")};
  s.response_schema = live::accepted_response_schema;  // answered as apply_force is
  s.changes_world = true;                              // a replay served live refuses it
  // the handler: the request has passed the key check; say what the session is asked
  s.handler = [](const json& request, const live::ServiceContext& context, runtime::ControlRequest::Action& out,
                 std::string* why) {
    const double h = request["heading_deg"].get<double>() * M_PI / 180;
    const double n = request["newtons"].get<double>();
    // an operator command through its own JSON codec (the body's name resolved there)
    json force{{"name", "nudge"},
               {"body", request["body"]},
               {"force", {n * std::sin(h), n * std::cos(h), 0.0}},  // x east, y north
               {"duration_s", request.value("duration_s", 1.0)}};
    runtime::OperatorCommand command;
    if (!runtime::command_from_json(runtime::ApplyForce::kind, force, context.bodies, command, why)) return false;
    out = runtime::ControlRequest::World{std::move(command)};
    return true;
  };
  return s;
}

// a vehicle that answers every step with nothing: the twin moves by what acts on it
class Quiet final : public runtime::Endpoint {
 public:
  using Endpoint::Endpoint;
  bool publish(const runtime::StepContext&, const runtime::WorldState&) override { return true; }
  runtime::GatherStatus gather(const runtime::StepContext& ctx, runtime::SteadyClock::time_point,
                               runtime::Reply& reply) override {
    reply.clear();
    reply.step = ctx.step;
    return runtime::GatherStatus::ready;
  }
};

bool expect(bool ok, const char* what, const json& detail = json()) {
  std::printf("%s: %s %s\n", ok ? "ok" : "FAILED", what, detail.is_null() ? "" : detail.dump().c_str());
  return ok;
}

}  // namespace

int main() {
  // the registration: before a server starts (the tether CLI would do it in register_extensions)
  if (!live::services().add(nudge_service())) return 1;

  const runtime::Scenario sc = runtime::parse_scenario(R"(name: nudge_demo
world: {water: {density_kg_m3: 1025}}
vehicles:
  - name: auv
    bodies: [{name: hull, shape: {type: sphere, radius_m: 0.2}, mass_kg: 34, initial: {position_m: [0, 0, -2]}}]
loop: {period_ms: 10, real_time_factor: 0, steps: 1000000}
endpoints: [{name: quiet, type: quiet, vehicle: auv}]
)",
                                                       "nudge_demo.yaml");
  std::vector<std::unique_ptr<runtime::Endpoint>> eps;
  eps.push_back(std::make_unique<Quiet>(sc.endpoints[0]));
  runtime::SessionControl control;
  runtime::SessionOptions options;
  options.control = &control;
  options.start_paused = true;
  runtime::Session session(sc, std::move(eps), options);
  live::ServerOptions so;
  so.port = 0;
  live::Server server(so, &control);
  server.set_bodies({{"auv.hull", 0}, {"auv", 0}});
  server.start();
  std::atomic<bool> stop{false};
  std::thread loop([&] { session.run(stop); });

  // a client: what Foxglove's Call service panel or `tether ctl call` would send
  bool ok = true;
  live::Client client;
  std::string error;
  json r;
  ok &= expect(client.connect("ws://127.0.0.1:" + std::to_string(server.port()), "", &error), "connected", error);
  ok &= expect(client.call("/example/nudge", {{"body", "auv"}, {"newtons", 20}, {"heading_deg", 90}}, r, &error) &&
                   r["ok"] == true && r["takes_effect_at_step"] == 0,
               "nudge east accepted", r);
  ok &= expect(
      client.call("/example/nudge", {{"body", "auv"}, {"newtons", 20}, {"heading", 90}}, r, &error) && r["ok"] == false,
      "a misspelt key is refused", r);
  ok &= expect(client.call("/example/nudge", {{"body", "rov"}, {"newtons", 20}, {"heading_deg", 0}}, r, &error) &&
                   r["ok"] == false,
               "an unknown body is refused", r);
  ok &= expect(client.call("/tether/step", {{"steps", 150}}, r, &error) && r["step"] == 150, "150 steps", r);
  client.call("/tether/shutdown", json::object(), r, &error);
  client.close();
  loop.join();
  server.stop();

  // 20 N east on 34 kg (and the water's added mass and drag) for 1 s: east, not north
  const runtime::Vec3 p = session.state().bodies[0].position_m;
  std::printf("after the nudge the AUV is at x = %.3f m (east), y = %.3f m (north)\n", p.x(), p.y());
  ok &= expect(p.x() > 0.05 && std::abs(p.y()) < 1e-6, "it went east");
  return ok ? 0 : 1;
}
