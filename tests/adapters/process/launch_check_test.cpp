// SPDX-License-Identifier: Apache-2.0
// `tether check`'s launch check: each endpoint says what of its launch is missing, and every
// endpoint is asked, whatever its type (a new type is not skipped).
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "tether/endpoints/endpoint_factory.hpp"
#include "tether/process/launch_check.hpp"
#include "tether/scenario/scenario.hpp"

using namespace tether::runtime;
using tether::adapters::launch_problems;

namespace {

// an endpoint type of its own that launches a program it cannot find
class Launching final : public Endpoint {
 public:
  explicit Launching(const EndpointConfig& c) : Endpoint(c) {}
  std::vector<std::string> launch_problems() const override {
    return tether::adapters::launch_problems(name(), {"./no/such/launched-program"});
  }
  bool publish(const StepContext&, const WorldState&) override { return true; }
  GatherStatus gather(const StepContext&, SteadyClock::time_point, Reply&) override { return GatherStatus::ready; }
};

}  // namespace

TEST_CASE("launch check: a missing program or firmware image, one message each, naming the endpoint") {
  const auto both = launch_problems("fw", {"./no/such/program", "--flag"}, "/no/such/image.elf");
  REQUIRE(both.size() == 2);
  CHECK(both[0] == "endpoint \"fw\": launch: the firmware image /no/such/image.elf does not exist (not built yet?)");
  CHECK(both[1] == "endpoint \"fw\": launch: the program ./no/such/program does not exist (not built yet?)");
  const auto off_path = launch_problems("v", {"tether-no-such-program-on-path"});
  REQUIRE(off_path.size() == 1);
  CHECK(off_path[0] == "endpoint \"v\": launch: tether-no-such-program-on-path is not on PATH (is it installed?)");
  CHECK(launch_problems("v", {"sh", "-c", "true"}).empty());
  CHECK(launch_problems("v", {}).empty());
  CHECK_FALSE(tether::adapters::find_program("sh").empty());
}

TEST_CASE("launch check: every endpoint is asked, a type registered outside the library included") {
  tether::adapters::endpoint_kinds().add(
      "launch_check_test",
      {[](const EndpointConfig& c, const Scenario&) -> std::unique_ptr<Endpoint> {
         return std::make_unique<Launching>(c);
       },
       {}, false},
      "test: launches a program that is not there");
  const Scenario sc = parse_scenario(R"(name: launch_check
world: {gravity_m_s2: [0, 0, 0]}
vehicles:
  - name: auv
    bodies: [{name: hull, shape: {type: sphere, radius_m: 0.2}, mass_kg: 2}]
loop: {period_ms: 10, steps: 1}
endpoints:
  - {name: ctl, type: in_process, vehicle: auv, controller: idle}
  - {name: mine, type: launch_check_test, vehicle: auv}
)",
                                     "launch_check.yaml");
  const auto endpoints = tether::adapters::make_endpoints(sc);
  const auto missing = launch_problems(endpoints);
  REQUIRE(missing.size() == 1);
  CHECK(missing[0] ==
        "endpoint \"mine\": launch: the program ./no/such/launched-program does not exist (not built yet?)");
}
