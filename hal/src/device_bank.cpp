// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/device_bank.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace tether::hal {

namespace {

constexpr std::uint32_t snapshot_magic = 0x42444854;  // "THDB"
constexpr std::uint32_t snapshot_version = 1;

// snapshot sinks: one appends bytes, one hashes them (FNV-1a 64) without storing them
struct AppendSink {
  std::string& out;
  void bytes(const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }
};
// word-wise: eight bytes per multiply (byte-wise FNV takes ~10 us over a 6 kB snapshot).
// Bytes are gathered in a block and hashed as little-endian words, so the result depends
// only on the byte sequence, not on how it was fed.
struct HashSink {
  static constexpr unsigned block = 256;
  std::uint64_t h = 0xCBF29CE484222325ull;
  std::uint64_t total = 0;
  unsigned fill = 0;
  std::uint8_t buf[block];

  void words(unsigned count) {
    for (unsigned i = 0; i < count; ++i) {
      h ^= tether_get_u64le(buf + 8 * i);
      h *= 0x9E3779B97F4A7C15ull;
      h = (h << 31) | (h >> 33);
    }
  }
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    total += n;
    while (n > 0) {
      const std::size_t k = std::min<std::size_t>(n, block - fill);
      std::memcpy(buf + fill, b, k);
      fill += static_cast<unsigned>(k);
      b += k;
      n -= k;
      if (fill == block) {
        words(block / 8);
        fill = 0;
      }
    }
  }
  std::uint64_t finish() {
    const unsigned padded = (fill + 7) / 8 * 8;
    std::memset(buf + fill, 0, padded - fill);
    words(padded / 8);
    return mix64(h ^ total);
  }
};

template <typename Sink>
void put_u64(Sink& s, std::uint64_t v) {
  std::uint8_t b[8];
  tether_put_u64le(b, v);
  s.bytes(b, 8);
}
template <typename Sink>
void put_u32(Sink& s, std::uint32_t v) {
  std::uint8_t b[4];
  tether_put_u32le(b, v);
  s.bytes(b, 4);
}
template <typename Sink>
void put_u8(Sink& s, std::uint8_t v) {
  s.bytes(&v, 1);
}
template <typename Sink>
void put_f64(Sink& s, double v) {
  std::uint64_t u;
  std::memcpy(&u, &v, 8);
  put_u64(s, u);
}
template <typename Sink>
void put_sample(Sink& s, const Sample& x) {
  for (double c : x.ch) put_f64(s, c);
  put_u8(s, x.flags);
  put_u8(s, x.valid ? 1 : 0);
  put_u64(s, static_cast<std::uint64_t>(x.time_ns));
}

// bounds-checked reader; the first short read sticks
struct Reader {
  std::string_view in;
  std::size_t at = 0;
  bool ok = true;

  const std::uint8_t* take(std::size_t n) {
    if (!ok || in.size() - at < n) {
      ok = false;
      return nullptr;
    }
    const auto* p = reinterpret_cast<const std::uint8_t*>(in.data() + at);
    at += n;
    return p;
  }
  std::uint64_t u64() {
    const auto* p = take(8);
    return p ? tether_get_u64le(p) : 0;
  }
  std::uint32_t u32() {
    const auto* p = take(4);
    return p ? tether_get_u32le(p) : 0;
  }
  std::uint8_t u8() {
    const auto* p = take(1);
    return p ? p[0] : 0;
  }
  double f64() {
    const std::uint64_t u = u64();
    double v;
    std::memcpy(&v, &u, 8);
    return v;
  }
  Sample sample() {
    Sample x;
    for (double& c : x.ch) c = f64();
    x.flags = u8();
    x.valid = u8() != 0;
    x.time_ns = static_cast<std::int64_t>(u64());
    return x;
  }
};

}  // namespace

int decode_command(DeviceKind kind, const std::uint8_t* bytes, double* out) {
  switch (kind) {
    case TETHER_KIND_THRUSTER: out[0] = tether_get_f32le(bytes + TETHER_THRUSTER_OFFSET_COMMAND); return 1;
    case TETHER_KIND_DC_MOTOR: out[0] = tether_get_f32le(bytes + TETHER_DC_MOTOR_OFFSET_VOLTAGE_V); return 1;
    case TETHER_KIND_FIN: out[0] = tether_get_f32le(bytes + TETHER_FIN_OFFSET_ANGLE_RAD); return 1;
    case TETHER_KIND_SERVO: out[0] = tether_get_f32le(bytes + TETHER_SERVO_OFFSET_ANGLE_RAD); return 1;
    case TETHER_KIND_WHEEL_DRIVE:
      out[0] = tether_get_f32le(bytes + TETHER_WHEEL_DRIVE_OFFSET_LEFT);
      out[1] = tether_get_f32le(bytes + TETHER_WHEEL_DRIVE_OFFSET_RIGHT);
      return 2;
    // not an actuator: no command
    case TETHER_KIND_NONE:
    case TETHER_KIND_RANGE:
    case TETHER_KIND_SONAR:
    case TETHER_KIND_ALTIMETER:
    case TETHER_KIND_DEPTH:
    case TETHER_KIND_GYRO:
    case TETHER_KIND_ACCEL:
    case TETHER_KIND_IMU:
    case TETHER_KIND_INCLINOMETER:
    case TETHER_KIND_COMPASS:
    case TETHER_KIND_DVL:
    case TETHER_KIND_GPS:
    case TETHER_KIND_CONTACT:
    case TETHER_KIND_CLOCK:
    case TETHER_KIND_TENSION:
    case TETHER_KIND_ENCODER: break;
  }
  return 0;
}

const char* to_string(Status status) {
  switch (status) {
    case Status::ok: return "ok";
    case Status::unknown_device: return "unknown_device";
    case Status::invalid_operation: return "invalid_operation";
    case Status::size_mismatch: return "size_mismatch";
    case Status::not_ready: return "not_ready";
    case Status::invalid_value: return "invalid_value";
  }
  return "?";
}

DeviceBank::DeviceBank(std::vector<DeviceSpec> specs, std::uint64_t scenario_seed, std::size_t body_count)
    : body_count_(body_count) {
  devices_.resize(specs.size());
  std::size_t payload_total = 0, beam_total = 0, ring_total = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    Device& d = devices_[i];
    d.spec = std::move(specs[i]);
    d.full_name = d.spec.name.full();
    std::string why;
    if (!validate_spec(d.spec, &why)) throw std::invalid_argument("device \"" + d.full_name + "\": " + why);
    if (static_cast<std::size_t>(d.spec.body) >= body_count)
      throw std::invalid_argument("device \"" + d.full_name + "\": body index " + std::to_string(d.spec.body) +
                                  " but the world has " + std::to_string(body_count) + " bodies");
    if (auto* t = std::get_if<ThrusterParams>(&d.spec.params)) *t = resolve_thruster(*t);
    d.info = &kind_info(d.spec.kind);
    d.payload_size = tether_kind_payload_size(static_cast<std::uint8_t>(d.spec.kind));
    d.payload_offset = payload_total;
    payload_total += d.payload_size;
    if (d.spec.kind == TETHER_KIND_SONAR) {
      d.beam_offset = beam_total;
      beam_total += std::get<RayParams>(d.spec.params).rays;
    }
    d.ring_size = d.spec.noise.delay_steps + 1;
    d.ring_offset = ring_total;
    ring_total += d.ring_size;
    d.period_ns = d.spec.rate_hz > 0 ? std::max<std::int64_t>(1, std::llround(1e9 / d.spec.rate_hz)) : 0;
    d.seed = device_seed(scenario_seed, d.full_name);
  }
  payloads_.assign(payload_total, 0);
  beams_.assign(beam_total, Vec3::Zero());
  ring_.assign(ring_total, Sample{});
  for (const Device& d : devices_)
    if (d.spec.kind == TETHER_KIND_SONAR) sonar_directions(std::get<RayParams>(d.spec.params), &beams_[d.beam_offset]);

  by_name_.resize(devices_.size());
  for (std::size_t i = 0; i < by_name_.size(); ++i) by_name_[i] = static_cast<std::uint32_t>(i);
  std::sort(by_name_.begin(), by_name_.end(),
            [&](std::uint32_t a, std::uint32_t b) { return devices_[a].full_name < devices_[b].full_name; });
  for (std::size_t i = 1; i < by_name_.size(); ++i)
    if (devices_[by_name_[i]].full_name == devices_[by_name_[i - 1]].full_name)
      throw std::invalid_argument("device \"" + devices_[by_name_[i]].full_name + "\" is declared twice");
  reset();
}

int DeviceBank::find(std::string_view name) const {
  const auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name, [&](std::uint32_t i, std::string_view n) {
    return std::string_view(devices_[i].full_name) < n;
  });
  if (it == by_name_.end() || devices_[*it].full_name != name) return -1;
  return static_cast<int>(*it);
}

void DeviceBank::reset_device(Device& d) {
  d.rng.seed(d.seed);
  d.bias.fill(0);
  d.sample_count = 0;
  d.next_sample_ns = 0;
  d.sampled = false;
  d.fresh = false;
  d.open = false;
  d.held = Sample{};
  d.raw_command = Sample{};
  d.actuator = ActuatorState{};
  for (std::uint32_t k = 0; k < d.ring_size; ++k) ring_[d.ring_offset + k] = Sample{};
  std::fill_n(payloads_.begin() + static_cast<std::ptrdiff_t>(d.payload_offset), d.payload_size, 0);
}

void DeviceBank::reset() {
  time_ns_ = 0;
  counters_ = DeviceCounters{};
  for (Device& d : devices_) reset_device(d);
}

// ---- the classic API ----------------------------------------------------------------------

Status DeviceBank::open(std::string_view name, DeviceHandle& out) {
  out = DeviceHandle{};
  const int index = find(name);
  if (index < 0) return Status::unknown_device;
  devices_[static_cast<std::size_t>(index)].open = true;
  out.index = index;
  return Status::ok;
}

Status DeviceBank::close(DeviceHandle handle) {
  if (handle.index < 0 || static_cast<std::size_t>(handle.index) >= devices_.size() ||
      !devices_[static_cast<std::size_t>(handle.index)].open)
    return Status::unknown_device;
  devices_[static_cast<std::size_t>(handle.index)].open = false;
  return Status::ok;
}

std::uint64_t DeviceBank::time_us() const { return time_ns_ > 0 ? static_cast<std::uint64_t>(time_ns_ / 1000) : 0u; }

Status DeviceBank::get(DeviceHandle handle, void* buf, std::size_t size) const {
  if (handle.index < 0 || static_cast<std::size_t>(handle.index) >= devices_.size() ||
      !devices_[static_cast<std::size_t>(handle.index)].open)
    return Status::unknown_device;
  const Device& d = devices_[static_cast<std::size_t>(handle.index)];
  if (d.info->actuator) return Status::invalid_operation;
  if (size != d.payload_size || (buf == nullptr && size != 0)) return Status::size_mismatch;
  if (!d.held.valid) return Status::not_ready;
  std::memcpy(buf, payloads_.data() + d.payload_offset, d.payload_size);
  return Status::ok;
}

Status DeviceBank::set(DeviceHandle handle, const void* buf, std::size_t size) {
  if (handle.index < 0 || static_cast<std::size_t>(handle.index) >= devices_.size() ||
      !devices_[static_cast<std::size_t>(handle.index)].open)
    return Status::unknown_device;
  return command(static_cast<std::size_t>(handle.index), static_cast<const std::uint8_t*>(buf), size);
}

// ---- the loop -----------------------------------------------------------------------------

Sample& DeviceBank::ring_at(const Device& d, std::uint64_t n) {
  return ring_[d.ring_offset + static_cast<std::size_t>(n % d.ring_size)];
}

void DeviceBank::apply_chain(Device& d, Sample& s) {
  const KindInfo& info = *d.info;
  if (!d.spec.noise.values_identity() && info.group_a_channels > 0)
    apply_noise(d.spec.noise, d.rng, d.bias.data(), s.ch.data(), info.group_a_channels);
  const int b_count = info.noisy_channels - info.group_a_channels;
  if (b_count > 0 && !d.spec.noise_b.values_identity())
    apply_noise(d.spec.noise_b, d.rng, d.bias.data() + info.group_a_channels, s.ch.data() + info.group_a_channels,
                b_count);
}

void DeviceBank::take_sample(Device& d, const WorldView& view, std::int64_t time_ns) {
  Sample s;
  measure(d.spec, view, time_ns, s, d.spec.kind == TETHER_KIND_SONAR ? &beams_[d.beam_offset] : nullptr);
  // the chain runs on every sample, valid or not, so a stream does not depend on the state
  apply_chain(d, s);
  if (draw_dropout(d.spec.noise, d.rng) && s.valid) {
    s.valid = false;
    ++counters_.dropped;
  }
  if (s.valid) finish_sample(d.spec, s);
  // delay line: the output is the sample from delay_steps samples ago
  const std::uint32_t delay = d.spec.noise.delay_steps;
  ring_at(d, d.sample_count) = s;
  d.held = d.sample_count >= delay ? ring_at(d, d.sample_count - delay) : Sample{};
  ++d.sample_count;
  ++counters_.samples;
  d.fresh = true;
  if (d.held.valid) encode_sample(d.spec, d.held, payloads_.data() + d.payload_offset);
}

void DeviceBank::sense(const WorldView& view, std::int64_t time_ns) {
  time_ns_ = time_ns;
  for (Device& d : devices_) {
    if (d.info->actuator) continue;
    if (d.period_ns > 0 && d.sampled && time_ns < d.next_sample_ns) {
      d.fresh = false;  // a slow sensor holds its last sample between samples
      continue;
    }
    take_sample(d, view, time_ns);
    if (d.period_ns > 0) {
      d.next_sample_ns = (d.sampled ? d.next_sample_ns : time_ns) + d.period_ns;
      while (d.next_sample_ns <= time_ns) d.next_sample_ns += d.period_ns;  // missed samples are skipped
    }
    d.sampled = true;
  }
}

Status DeviceBank::command(std::size_t index, const std::uint8_t* bytes, std::size_t size) {
  if (index >= devices_.size()) return Status::unknown_device;
  Device& d = devices_[index];
  if (!d.info->actuator) return Status::invalid_operation;
  if (size != d.payload_size || bytes == nullptr) {
    ++counters_.invalid_commands;
    return Status::size_mismatch;
  }
  double values[max_channels] = {};
  const int n = decode_command(d.spec.kind, bytes, values);
  for (int i = 0; i < n; ++i)
    if (!std::isfinite(values[i])) {
      ++counters_.invalid_commands;
      return Status::invalid_value;
    }
  for (int i = 0; i < n; ++i) d.raw_command.ch[static_cast<std::size_t>(i)] = values[i];
  d.raw_command.valid = true;
  d.raw_command.time_ns = time_ns_;
  std::memcpy(payloads_.data() + d.payload_offset, bytes, size);
  return Status::ok;
}

void DeviceBank::actuate(const WorldView& view, double dt_s, std::vector<Wrench>& per_body) {
  if (per_body.size() != body_count_) per_body.resize(body_count_);  // allocates on first use only
  for (Wrench& w : per_body) w.clear();
  for (Device& d : devices_) {
    if (!d.info->actuator) continue;
    // no command yet: the actuator idles, no noise on a command nobody gave
    Sample s = d.raw_command;
    if (s.valid) apply_chain(d, s);
    if (draw_dropout(d.spec.noise, d.rng) && s.valid) {
      // a lost command: the actuator keeps the one before
      s = d.sample_count > 0 ? ring_at(d, d.sample_count - 1) : Sample{};
      ++counters_.dropped;
    }
    const std::uint32_t delay = d.spec.noise.delay_steps;
    ring_at(d, d.sample_count) = s;
    d.held = d.sample_count >= delay ? ring_at(d, d.sample_count - delay) : Sample{};
    ++d.sample_count;
    double u[max_channels] = {};
    if (d.held.valid)
      for (int i = 0; i < d.info->channels; ++i) u[i] = d.held.ch[static_cast<std::size_t>(i)];
    actuate_device(d.spec, u, d.actuator, view, dt_s, per_body[static_cast<std::size_t>(d.spec.body)]);
    // an actuator that also acts on another body (a motor turning a wheel or a joint's child)
    if (d.info->react) d.info->react(d.spec, d.actuator.x.data(), view, per_body.data(), per_body.size());
  }
}

// ---- adapters and observers ---------------------------------------------------------------

void DeviceBank::override_output(std::size_t index, const Sample& s) {
  if (index >= devices_.size() || devices_[index].info->actuator) return;
  Device& d = devices_[index];
  d.held = s;
  if (d.held.valid) {
    finish_sample(d.spec, d.held);
    encode_sample(d.spec, d.held, payloads_.data() + d.payload_offset);
  }
}

Status DeviceBank::reading(std::size_t index, const std::uint8_t*& data, std::size_t& size) const {
  data = nullptr;
  size = 0;
  if (index >= devices_.size()) return Status::unknown_device;
  const Device& d = devices_[index];
  data = payloads_.data() + d.payload_offset;
  size = d.payload_size;
  const bool ready = d.info->actuator ? d.raw_command.valid : d.held.valid;
  return ready ? Status::ok : Status::not_ready;
}

Status DeviceBank::measure_true(std::size_t index, const WorldView& view, std::int64_t time_ns, std::uint8_t* out,
                                std::size_t size) const {
  if (index >= devices_.size()) return Status::unknown_device;
  const Device& d = devices_[index];
  if (d.info->actuator) return Status::invalid_operation;
  if (size != d.payload_size || out == nullptr) return Status::size_mismatch;
  Sample s;
  measure(d.spec, view, time_ns, s, d.spec.kind == TETHER_KIND_SONAR ? &beams_[d.beam_offset] : nullptr);
  if (!s.valid) return Status::not_ready;
  finish_sample(d.spec, s);
  encode_sample(d.spec, s, out);
  return Status::ok;
}

std::size_t DeviceBank::gps_sentences(std::size_t index, char* out, std::size_t capacity) const {
  if (index >= devices_.size() || out == nullptr) return 0;
  const Device& d = devices_[index];
  if (d.spec.kind != TETHER_KIND_GPS || !d.held.valid || capacity < 2 * (nmea_max_length + 2)) return 0;
  const auto& p = std::get<GpsParams>(d.spec.params);
  const GeoPoint g = gps_point(p, d.held);
  const std::int64_t utc = gps_utc_cs(p, d.held.time_ns);
  std::size_t n = format_gga(out, capacity, utc, g, p.satellites, p.hdop);
  out[n++] = '\r';
  out[n++] = '\n';
  const double ve = d.held.ch[3], vn = d.held.ch[4];
  const double course = std::atan2(ve, vn) * 180.0 / 3.14159265358979323846;
  const std::size_t m = format_rmc(out + n, capacity - n, utc, g, std::hypot(ve, vn), course);
  n += m;
  out[n++] = '\r';
  out[n++] = '\n';
  return n;
}

// ---- snapshots ----------------------------------------------------------------------------

template <typename Sink>
void DeviceBank::write_state(Sink& sink) const {
  put_u32(sink, snapshot_magic);
  put_u32(sink, snapshot_version);
  put_u32(sink, static_cast<std::uint32_t>(devices_.size()));
  put_u64(sink, static_cast<std::uint64_t>(time_ns_));
  put_u64(sink, counters_.samples);
  put_u64(sink, counters_.dropped);
  put_u64(sink, counters_.invalid_commands);
  for (const Device& d : devices_) {
    put_u8(sink, static_cast<std::uint8_t>(d.spec.kind));
    put_u32(sink, d.ring_size);
    for (std::uint64_t w : d.rng.s) put_u64(sink, w);
    put_u8(sink, d.rng.has_spare ? 1 : 0);
    put_f64(sink, d.rng.spare);
    for (double b : d.bias) put_f64(sink, b);
    put_u64(sink, d.sample_count);
    put_u64(sink, static_cast<std::uint64_t>(d.next_sample_ns));
    put_u8(sink, static_cast<std::uint8_t>((d.sampled ? 1 : 0) | (d.fresh ? 2 : 0) | (d.open ? 4 : 0)));
    put_sample(sink, d.held);
    put_sample(sink, d.raw_command);
    for (double x : d.actuator.x) put_f64(sink, x);
    for (std::uint32_t k = 0; k < d.ring_size; ++k) put_sample(sink, ring_[d.ring_offset + k]);
    sink.bytes(payloads_.data() + d.payload_offset, d.payload_size);
  }
}

void DeviceBank::snapshot(std::string& out) const {
  AppendSink sink{out};
  write_state(sink);
}

std::uint64_t DeviceBank::hash() const {
  HashSink sink;
  write_state(sink);
  return sink.finish();
}

std::uint64_t DeviceBank::hash_bytes(std::string_view snapshot_bytes) {
  HashSink sink;
  sink.bytes(snapshot_bytes.data(), snapshot_bytes.size());
  return sink.finish();
}

bool DeviceBank::restore(std::string_view bytes, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = "device snapshot: " + why;
    return false;
  };
  Reader r{bytes};
  if (r.u32() != snapshot_magic || !r.ok) return fail("not a device snapshot");
  if (r.u32() != snapshot_version) return fail("unsupported version");
  if (r.u32() != devices_.size()) return fail("made for a different number of devices");
  // parse into copies; the bank changes only if the whole snapshot fits
  std::vector<Device> devices = devices_;
  std::vector<std::uint8_t> payloads = payloads_;
  std::vector<Sample> ring = ring_;
  const auto time_ns = static_cast<std::int64_t>(r.u64());
  DeviceCounters counters;
  counters.samples = r.u64();
  counters.dropped = r.u64();
  counters.invalid_commands = r.u64();
  for (Device& d : devices) {
    if (r.u8() != static_cast<std::uint8_t>(d.spec.kind))
      return fail("device \"" + d.full_name + "\" has another kind");
    if (r.u32() != d.ring_size) return fail("device \"" + d.full_name + "\" has another delay");
    for (std::uint64_t& w : d.rng.s) w = r.u64();
    d.rng.has_spare = r.u8() != 0;
    d.rng.spare = r.f64();
    for (double& b : d.bias) b = r.f64();
    d.sample_count = r.u64();
    d.next_sample_ns = static_cast<std::int64_t>(r.u64());
    const std::uint8_t bits = r.u8();
    d.sampled = bits & 1;
    d.fresh = bits & 2;
    d.open = bits & 4;
    d.held = r.sample();
    d.raw_command = r.sample();
    for (double& x : d.actuator.x) x = r.f64();
    for (std::uint32_t k = 0; k < d.ring_size; ++k) ring[d.ring_offset + k] = r.sample();
    const std::uint8_t* p = r.take(d.payload_size);
    if (p && d.payload_size) std::memcpy(payloads.data() + d.payload_offset, p, d.payload_size);
    if (!r.ok) return fail("truncated");
  }
  if (!r.ok) return fail("truncated");
  if (r.at != bytes.size()) return fail("trailing bytes");
  devices_ = std::move(devices);
  payloads_ = std::move(payloads);
  ring_ = std::move(ring);
  time_ns_ = time_ns;
  counters_ = counters;
  return true;
}

}  // namespace tether::hal
