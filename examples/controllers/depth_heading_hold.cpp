// SPDX-License-Identifier: Apache-2.0
// A template in-process controller: copy this file to start one (docs/extending.md).
// The class implements runtime::Controller; register_example_controllers() adds it to the
// controller registry under the name a scenario's `controller:` key uses.
#include "example_controllers.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "depth_heading_law.h"
#include "tether/firmware_shim/payloads.h"
#include "tether/hal/device_bank.hpp"
#include "tether/loop/in_process.hpp"

namespace tether::examples {

namespace {

using namespace tether::runtime;

// examples/firmware/depth_heading_hold.c run in-process: the same law (one header), fed
// from the device bank instead of SENSORS frames, answering with the same thruster
// payloads as ACTUATE would; so a firmware-in-the-loop run can be compared bit for bit
class DepthHeadingHoldController final : public Controller {
 public:
  void configure(const ConfigNode& p, const WorldModel& model, int vehicle) override {
    if (vehicle < 0) {
      p.error("the depth_heading_hold controller needs the endpoint's `vehicle`");
      return;
    }
    if (p.yaml().IsDefined()) p.expect_map({"part"});
    prefix_ = model.vehicles[static_cast<std::size_t>(vehicle)].name + "." + p.string_or("part", "hull") + ".";
    dhh_init(&law_);
  }

  // an identification plan's manoeuvres: surge (the cruise command, -1..1), depth_m (below
  // the surface), heading_deg (compass, clockwise from north), coast_s (every thruster off
  // for that many seconds from the next step: a coast-down, where drag alone slows the
  // vehicle; the law keeps running, unheard, and takes over where it has got to)
  std::vector<std::string> setpoint_names() const override { return {"surge", "depth_m", "heading_deg", "coast_s"}; }
  Range setpoint_range(const std::string& name) const override {
    if (name == "surge") return Range::between(-1, 1);
    if (name == "depth_m") return Range::between(0, 11000);
    if (name == "heading_deg") return Range::between(-360, 360);
    if (name == "coast_s") return Range::between(0, 3600);
    return Range::any();
  }
  bool set_setpoint(const std::string& name, double value) override {
    if (name == "coast_s")
      coast_pending_s_ = std::clamp(value, 0.0, 3600.0);
    else if (name == "surge")
      law_.cruise = static_cast<float>(std::clamp(value, -1.0, 1.0));
    else if (name == "depth_m")
      law_.target_depth_m = static_cast<float>(value);
    else if (name == "heading_deg")
      law_.target_heading_rad = static_cast<float>(value * 3.14159265358979323846 / 180.0);
    else
      return false;
    return true;
  }

  void compute(const StepContext&, const WorldModel&, const WorldState&, const hal::DeviceBank* devices,
               Reply& out) override {
    out.clear();
    if (!devices || depth_ < 0) return;
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
    const bool has_depth = devices->reading(static_cast<std::size_t>(depth_), data, size) == hal::Status::ok;
    const float depth_m = has_depth ? tether_get_f32le(data + TETHER_DEPTH_OFFSET_DEPTH_M) : 0.0f;
    const bool has_heading = devices->reading(static_cast<std::size_t>(compass_), data, size) == hal::Status::ok;
    const float heading = has_heading ? tether_get_f32le(data + TETHER_COMPASS_OFFSET_HEADING_RAD) : 0.0f;
    dhh_commands_t cmd;
    const std::uint64_t now_us = devices->time_us();
    if (dhh_step(&law_, now_us, has_depth, depth_m, has_heading, heading, &cmd))
      out.logs.push_back({0, "depth_heading_hold: target depth reached"});
    if (coast_pending_s_ > 0) {
      coast_until_us_ = now_us + static_cast<std::uint64_t>(coast_pending_s_ * 1e6);
      coast_pending_s_ = 0;
    }
    if (now_us < coast_until_us_) cmd = dhh_commands_t{0.0f, 0.0f, 0.0f, 0.0f};
    const float values[4] = {cmd.left, cmd.right, cmd.vfront, cmd.vrear};
    for (int i = 0; i < 4; ++i) {
      DeviceCommand c;
      c.device = static_cast<std::uint16_t>(thrusters_[i]);
      c.size = TETHER_THRUSTER_SIZE;
      tether_put_f32le(c.bytes.data() + TETHER_THRUSTER_OFFSET_COMMAND, values[i]);
      out.commands.push_back(c);
    }
  }

 private:
  void bind_devices(const hal::DeviceBank& devices) override {
    static const char* thruster_names[4] = {"thruster_left", "thruster_right", "thruster_vfront", "thruster_vrear"};
    depth_ = devices.find(prefix_ + "depth");
    compass_ = devices.find(prefix_ + "compass");
    bool ok = depth_ >= 0 && compass_ >= 0;
    for (int i = 0; i < 4; ++i) {
      thrusters_[i] = devices.find(prefix_ + thruster_names[i]);
      ok = ok && thrusters_[i] >= 0;
    }
    if (!ok) {
      depth_ = -1;
      throw std::runtime_error("depth_heading_hold needs the devices " + prefix_ +
                               "depth, compass, thruster_left, "
                               "thruster_right, thruster_vfront and thruster_vrear");
    }
  }

  std::string prefix_;
  dhh_state_t law_{};
  double coast_pending_s_ = 0;        // a coast-down asked for, from the next step
  std::uint64_t coast_until_us_ = 0;  // thrusters off before this sim time
  int depth_ = -1, compass_ = -1;
  int thrusters_[4] = {-1, -1, -1, -1};
};

}  // namespace

bool register_example_controllers() {
  controllers().add(
      "depth_heading_hold", [] { return std::make_unique<DepthHeadingHoldController>(); },
      "examples/firmware/depth_heading_hold.c's law, run in-process on the device bank");
  return controllers().find("depth_heading_hold") != nullptr;
}

}  // namespace tether::examples
