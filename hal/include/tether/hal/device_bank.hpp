// SPDX-License-Identifier: Apache-2.0
// All devices of a scenario, built once at configure time: the device API that firmware and
// observers use (open by name -> handle, get/set with a size check, time), and what the
// loop calls each step (sense, command, actuate), with snapshots for exact replay.
//
// The step never allocates, builds strings or looks a name up: names are resolved when the
// bank is built and by open(); every buffer is sized then.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tether/hal/actuators.hpp"
#include "tether/hal/device_spec.hpp"
#include "tether/hal/sensors.hpp"
#include "tether/hal/wrench.hpp"

namespace tether::hal {

/// An actuator command's channels as numbers from its payload bytes (which must be
/// tether_kind_payload_size(kind) long); returns how many (0 for a kind that is no actuator).
int decode_command(DeviceKind kind, const std::uint8_t* bytes, double* out);

/// Results of the device API; never an exception, never a crash.
enum class Status : std::uint8_t {
  ok = 0,
  unknown_device = 1,     // no device of that name, or a handle that is not open
  invalid_operation = 2,  // set on a sensor, get on an actuator
  size_mismatch = 3,      // the buffer is not exactly the kind's payload size
  not_ready = 4,          // no data for this sample (dropout, GPS under water, delay filling)
  invalid_value = 5,      // a command with NaN or infinity; the previous command stays
};

/// Lower-case name of a status ("ok", "unknown_device", ...).
const char* to_string(Status status);

/// An open device: its index in the bank (-1: none).
struct DeviceHandle {
  std::int32_t index = -1;
  bool valid() const { return index >= 0; }
};

/// Problems counted while running (part of snapshots, so replays reproduce them).
struct DeviceCounters {
  std::uint64_t samples = 0;           // sensor samples taken
  std::uint64_t dropped = 0;           // samples (or commands) lost to dropout
  std::uint64_t invalid_commands = 0;  // commands refused (size or value)
};

class DeviceBank {
 public:
  DeviceBank() = default;
  /// Builds the bank from the scenario's devices (index = position in `specs`). Seeds each
  /// device's noise from `scenario_seed` and its full name. Throws std::invalid_argument
  /// naming the device if a spec is invalid, a name repeats or a body index is >= body_count.
  DeviceBank(std::vector<DeviceSpec> specs, std::uint64_t scenario_seed, std::size_t body_count);

  /// Number of devices.
  std::size_t size() const { return devices_.size(); }
  /// The spec a device was built from.
  const DeviceSpec& spec(std::size_t index) const { return devices_[index].spec; }
  /// "vehicle.part.device" of a device.
  const std::string& full_name(std::size_t index) const { return devices_[index].full_name; }
  /// Payload bytes of a device's kind.
  std::size_t payload_size(std::size_t index) const { return devices_[index].payload_size; }
  /// True for actuators.
  bool is_actuator(std::size_t index) const { return devices_[index].info->actuator; }
  /// Index of a device by full name, or -1 (configure time: a binary search over names).
  int find(std::string_view full_name) const;
  /// Number of bodies the bank was built for.
  std::size_t body_count() const { return body_count_; }

  // ---- the classic device API -----------------------------------------------------------

  /// Opens a device by full name; `out` gets its handle (or stays invalid).
  [[nodiscard]] Status open(std::string_view full_name, DeviceHandle& out);
  /// Closes a handle; later get/set on it return unknown_device.
  [[nodiscard]] Status close(DeviceHandle handle);
  /// Simulation time of the last sense(), microseconds.
  std::uint64_t time_us() const;
  /// Copies a sensor's current reading (exactly payload_size bytes) into `buf`. not_ready
  /// leaves `buf` untouched.
  [[nodiscard]] Status get(DeviceHandle handle, void* buf, std::size_t size) const;
  /// Sets an actuator's command from its payload bytes; applied at the next actuate().
  [[nodiscard]] Status set(DeviceHandle handle, const void* buf, std::size_t size);

  // ---- what the loop calls --------------------------------------------------------------

  /// Takes one sample of every sensor that is due at `time_ns` (call once per step, with the
  /// state the readings describe): true value, noise chain, dropout, delay, encoding.
  void sense(const WorldView& view, std::int64_t time_ns);
  /// Sets an actuator's command from payload bytes (a firmware ACTUATE entry), by index.
  [[nodiscard]] Status command(std::size_t index, const std::uint8_t* bytes, std::size_t size);
  /// Advances every actuator by dt under its command (through its noise chain) and writes
  /// the resulting wrench of each body into `per_body` (sized to body_count; zeroed first).
  void actuate(const WorldView& view, double dt_s, std::vector<Wrench>& per_body);

  // ---- for adapters and observers -------------------------------------------------------

  /// A device's current payload (sensor reading or last command bytes) and its status.
  [[nodiscard]] Status reading(std::size_t index, const std::uint8_t*& data, std::size_t& size) const;
  /// True if the sensor took a new sample in the last sense() (false while a slow sensor
  /// holds its previous one).
  bool fresh(std::size_t index) const { return devices_[index].fresh; }
  /// The current reading as numbers (after noise), or an actuator's effective command.
  const Sample& sample(std::size_t index) const { return devices_[index].held; }
  /// Replaces a sensor's current output (fault injection, docs/faults.md): `s` is what is
  /// delivered until the sensor's next sample (an invalid `s`: no data). The delay line and
  /// the noise streams are untouched; the output is part of snapshots, so replays agree.
  void override_output(std::size_t index, const Sample& s);
  /// An actuator's internal state (rotor speed, angle, wheel speeds).
  const ActuatorState& actuator_state(std::size_t index) const { return devices_[index].actuator; }
  /// The noiseless reading of a sensor in `view` at `time_ns`, encoded into `out` (exactly
  /// payload_size bytes); changes no state. not_ready when the true reading has no data.
  [[nodiscard]] Status measure_true(std::size_t index, const WorldView& view, std::int64_t time_ns, std::uint8_t* out,
                                    std::size_t size) const;
  /// A GPS device's current $GPGGA and $GPRMC sentences, each ended by CR LF, written into
  /// `out`; returns the length (0 if not a GPS, no fix or `capacity` < 2 * 82).
  std::size_t gps_sentences(std::size_t index, char* out, std::size_t capacity) const;
  const DeviceCounters& counters() const { return counters_; }

  // ---- exact replay -----------------------------------------------------------------------

  /// Appends all mutable device state (time, RNG streams, bias walks, delay lines, held
  /// readings, commands, actuator states, open handles, counters) as little-endian bytes.
  void snapshot(std::string& out) const;
  /// Restores a snapshot of a bank built from the same specs; false (state unchanged) and a
  /// reason in `error` if it does not fit.
  bool restore(std::string_view bytes, std::string* error);
  /// A 64-bit hash of the snapshot bytes, computed without building them
  /// (hash() == hash_bytes(snapshot)): equal hashes mean equal device state.
  std::uint64_t hash() const;
  /// The hash of a snapshot held as bytes (e.g. read back from a recording).
  static std::uint64_t hash_bytes(std::string_view snapshot_bytes);
  /// Back to the state right after construction.
  void reset();

 private:
  struct Device {
    DeviceSpec spec;
    const KindInfo* info = nullptr;
    std::string full_name;
    std::uint16_t payload_size = 0;
    std::size_t payload_offset = 0;  // into payloads_
    std::size_t beam_offset = 0;     // into beams_ (sonar)
    std::size_t ring_offset = 0;     // into ring_ (delay line, delay_steps + 1 samples)
    std::uint32_t ring_size = 1;
    std::int64_t period_ns = 0;  // 0: every step
    std::uint64_t seed = 0;
    // mutable state: everything below is in snapshots
    Rng rng;
    std::array<double, max_channels> bias{};
    std::uint64_t sample_count = 0;  // samples taken (sensors) or commands applied (actuators)
    std::int64_t next_sample_ns = 0;
    bool sampled = false;  // has taken a sample since reset
    bool fresh = false;
    bool open = false;
    Sample held;         // current output (sensor) / effective command (actuator)
    Sample raw_command;  // actuator: the last command as set
    ActuatorState actuator;
  };

  template <typename Sink>
  void write_state(Sink& sink) const;
  void reset_device(Device& d);
  void take_sample(Device& d, const WorldView& view, std::int64_t time_ns);
  void apply_chain(Device& d, Sample& s);
  Sample& ring_at(const Device& d, std::uint64_t n);

  std::vector<Device> devices_;
  std::vector<std::uint32_t> by_name_;  // device indices sorted by full name
  std::vector<std::uint8_t> payloads_;  // every device's current payload
  std::vector<Vec3> beams_;             // sonar ray directions, device frame
  std::vector<Sample> ring_;            // delay lines
  std::size_t body_count_ = 0;
  std::int64_t time_ns_ = 0;
  DeviceCounters counters_;
};

}  // namespace tether::hal
