// SPDX-License-Identifier: Apache-2.0
// What the mcu endpoint shows of each step (docs/mcu.md, "What a person sees"): one frame a
// step in Reply::wire with every wired pin's value and when in the step it changed, and each
// I2C chip's transactions, recorded with the step and shown as Foxglove topics under
// /endpoints/NAME/: `pins` (all), `pins/D9` (one a pin) and `i2c`.
//
// The frame: u8 pin count, per pin f64 value and f64 µs into the step of its last change
// (negative: none this step), u8 chip count, per chip u32 transactions and u32 NACKs of the
// step; little-endian.
#include <charconv>
#include <cstring>
#include <string>

#include "mcu_wire.hpp"

namespace tether::adapters {

namespace {

constexpr const char* pins_schema = R"js({"type":"object","title":"An mcu endpoint's pins at the end of a step",
"properties":{"step":{"type":"integer"},"pins":{"type":"array","items":{"type":"object","properties":{
"pin":{"type":"string"},"role":{"type":"string"},"device":{"type":"string"},
"value":{"type":"number","description":"volts (analog_in), level (digital_in, digital_out), duty 0..1 (pwm_out), µs (pulse_out)"},
"changed_us":{"type":["number","null"],"description":"when in the step the pin last changed; null: not this step or not seen"}}}}}})js";

constexpr const char* pin_schema = R"js({"type":"object","title":"One pin of an mcu endpoint at the end of a step",
"properties":{"step":{"type":"integer"},"value":{"type":"number"},"changed_us":{"type":["number","null"]}}})js";

constexpr const char* i2c_schema = R"js({"type":"object","title":"An mcu endpoint's I2C chips in a step",
"properties":{"step":{"type":"integer"},"chips":{"type":"array","items":{"type":"object","properties":{
"chip":{"type":"string"},"address":{"type":"integer"},"transactions":{"type":"integer"},"nacks":{"type":"integer"}}}}}})js";

const char* role_name(McuPinConfig::Role r) {
  switch (r) {
    case McuPinConfig::Role::analog_in: return "analog_in";
    case McuPinConfig::Role::digital_in: return "digital_in";
    case McuPinConfig::Role::pwm_out: return "pwm_out";
    case McuPinConfig::Role::pulse_out: return "pulse_out";
    case McuPinConfig::Role::digital_out: return "digital_out";
  }
  return "?";
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
std::uint64_t get_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
double get_f64(const char* p) {
  const std::uint64_t bits = get_u64(p);
  double d = 0;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

void append_number(std::string& out, double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_changed(std::string& out, double changed_us) {
  if (changed_us < 0)
    out.append("null");
  else
    append_number(out, changed_us);
}

// the frame's pins and chips; false if it is not a whole frame for this config
bool frame_fits(std::string_view b, std::size_t pins, std::size_t chips) {
  return b.size() == 2 + 16 * pins + 8 * chips && static_cast<unsigned char>(b[0]) == pins &&
         static_cast<unsigned char>(b[1 + 16 * pins]) == chips;
}

}  // namespace

void McuFrame::begin(std::size_t pins) {
  bytes.clear();
  bytes.push_back(static_cast<char>(pins));
}

void McuFrame::pin(double value, double changed_us) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  put_u64(bytes, bits);
  std::memcpy(&bits, &changed_us, sizeof bits);
  put_u64(bytes, bits);
}

void McuFrame::chips(std::size_t count) { bytes.push_back(static_cast<char>(count)); }

void McuFrame::chip(std::uint32_t transactions, std::uint32_t nacks) {
  put_u32(bytes, transactions);
  put_u32(bytes, nacks);
}

std::vector<runtime::WireTopic> mcu_wire_topics(const McuEndpointConfig& config,
                                                const std::vector<std::string>& device_names) {
  std::vector<runtime::WireTopic> topics;
  const std::size_t np = config.pins.size(), nc = config.i2c.size();
  struct PinInfo {
    std::string label, role, device;
  };
  std::vector<PinInfo> info;
  for (const McuPinConfig& p : config.pins)
    info.push_back({p.pin.label(), role_name(p.role),
                    p.device >= 0 && static_cast<std::size_t>(p.device) < device_names.size()
                        ? device_names[static_cast<std::size_t>(p.device)]
                        : ""});
  if (np > 0) {
    runtime::WireTopic all;
    all.suffix = "pins";
    all.schema_name = "tether.McuPins";
    all.schema = pins_schema;
    all.render = [info, np, nc](std::uint64_t step, std::string_view b, std::string& out) {
      if (!frame_fits(b, np, nc)) return false;
      out.append("{\"step\":");
      append_number(out, static_cast<double>(step));
      out.append(",\"pins\":[");
      for (std::size_t i = 0; i < np; ++i) {
        if (i) out.push_back(',');
        out.append("{\"pin\":\"" + info[i].label + "\",\"role\":\"" + info[i].role + "\",\"device\":\"" +
                   info[i].device + "\",\"value\":");
        append_number(out, get_f64(b.data() + 1 + 16 * i));
        out.append(",\"changed_us\":");
        append_changed(out, get_f64(b.data() + 1 + 16 * i + 8));
        out.push_back('}');
      }
      out.append("]}");
      return true;
    };
    topics.push_back(std::move(all));
    for (std::size_t i = 0; i < np; ++i) {
      runtime::WireTopic one;
      one.suffix = "pins/" + info[i].label.substr(0, info[i].label.find(' '));
      one.schema_name = "tether.McuPin";
      one.schema = pin_schema;
      one.render = [i, np, nc](std::uint64_t step, std::string_view b, std::string& out) {
        if (!frame_fits(b, np, nc)) return false;
        out.append("{\"step\":");
        append_number(out, static_cast<double>(step));
        out.append(",\"value\":");
        append_number(out, get_f64(b.data() + 1 + 16 * i));
        out.append(",\"changed_us\":");
        append_changed(out, get_f64(b.data() + 1 + 16 * i + 8));
        out.push_back('}');
        return true;
      };
      topics.push_back(std::move(one));
    }
  }
  if (nc > 0) {
    std::vector<std::pair<std::string, int>> chips;
    for (const McuI2cConfig& c : config.i2c) chips.emplace_back(c.chip, c.address);
    runtime::WireTopic i2c;
    i2c.suffix = "i2c";
    i2c.schema_name = "tether.McuI2c";
    i2c.schema = i2c_schema;
    i2c.render = [chips, np, nc](std::uint64_t step, std::string_view b, std::string& out) {
      if (!frame_fits(b, np, nc)) return false;
      out.append("{\"step\":");
      append_number(out, static_cast<double>(step));
      out.append(",\"chips\":[");
      const char* at = b.data() + 2 + 16 * np;
      for (std::size_t i = 0; i < nc; ++i) {
        if (i) out.push_back(',');
        out.append("{\"chip\":\"" + chips[i].first + "\",\"address\":");
        append_number(out, static_cast<double>(chips[i].second));
        out.append(",\"transactions\":");
        append_number(out, static_cast<double>(get_u32(at + 8 * i)));
        out.append(",\"nacks\":");
        append_number(out, static_cast<double>(get_u32(at + 8 * i + 4)));
        out.push_back('}');
      }
      out.append("]}");
      return true;
    };
    topics.push_back(std::move(i2c));
  }
  return topics;
}

}  // namespace tether::adapters
