// SPDX-License-Identifier: Apache-2.0
// The recorder's ring and writer thread: the loop hands items over, the writer writes them.
// Opening the file (channels, scene) is in recorder_open.cpp; the derived per-step views in
// recorder_views.cpp.
#include "tether/recording/json_text.hpp"
#include "tether/recording/recorder.hpp"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "tether/hal/device_bank.hpp"
#include "tether/recording/mcap_writer.hpp"
#include "recorder_json.hpp"

namespace tether::runtime {

using nlohmann::json;
using recorder_json::stamp;

// slots reserved beyond two per planned step (keyframes, events, the summary)
constexpr std::uint64_t min_reserved_slots = 64;

Recorder::Recorder(const Scenario& scenario, std::vector<std::string> endpoint_names,
                   std::vector<std::pair<std::string, std::vector<std::string>>> processor_fields)
    : Recorder(scenario, RecorderInputs{std::move(endpoint_names), std::move(processor_fields), {}, {}, 0}) {}

Recorder::Recorder(const Scenario& scenario, RecorderInputs inputs)
    : scenario_(scenario), endpoint_names_(std::move(inputs.endpoint_names)),
      processor_fields_(std::move(inputs.processor_fields)), safe_replies_(std::move(inputs.safe_replies)),
      wire_topics_(std::move(inputs.wire_topics)), writer_(std::make_unique<mcap::Writer>()) {
  ring_.resize(scenario.recording.queue_slots);
  const std::size_t keyframes_in_ring =
      scenario.recording.queue_slots / std::max<std::uint64_t>(1, scenario.recording.keyframe_every_steps) + 2;
  keyframes_.resize(std::clamp<std::size_t>(keyframes_in_ring, 4, 64));
  keyframe_queued_.assign(keyframes_.size(), 0);
  // the buffers the loop fills are grown here, not in the loop's first lap through the ring;
  // a run of N steps fills at most its steps, keyframes and a few events, so it reserves
  // those slots only (the ring is used in order from slot 0). Reserving all 4,096 cost a
  // 200-step run about a sixth of its CPU time in page faults (docs/recording.md, "The ring").
  reserve(step_staging_);
  const std::size_t used =
      inputs.steps == 0
          ? ring_.size()
          : static_cast<std::size_t>(std::min<std::uint64_t>(ring_.size(), 2 * inputs.steps + min_reserved_slots));
  for (std::size_t i = 0; i < used; ++i) reserve(ring_[i].step_item);
}

void Recorder::reserve(StepItem& item) const {
  const std::size_t bodies = scenario_.model.bodies.size();
  item.record.slots.resize(endpoint_names_.size());
  for (SlotRecord& s : item.record.slots) {
    s.reply.wrenches.reserve(bodies);
    s.reply.commands.reserve(scenario_.devices.size());
    // a pose per vehicle is the usual reply; more grow the buffer once, on first use
    s.reply.measurements.reserve(scenario_.model.vehicles.size());
  }
  item.actual.bodies.reserve(bodies);
  item.projected.bodies.reserve(bodies);
  std::size_t fields = 0;
  for (const auto& p : processor_fields_) fields += p.second.size();
  item.values.reserve(fields);
  item.sensors.reserve(scenario_.devices.size());
}

Recorder::~Recorder() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
}

std::uint64_t Recorder::bytes_written() const { return writer_->bytes_written(); }

std::uint16_t Recorder::schema(const std::string& name, const std::string& encoding, const std::string& text) {
  schemas_.push_back({name, encoding, text});
  return writer_->add_schema(name, encoding, text);
}

std::uint16_t Recorder::channel(std::uint16_t schema, const std::string& topic, const std::string& encoding) {
  const std::uint16_t id = writer_->add_channel(schema, topic, encoding);
  RecordedChannel c;
  c.id = id;
  c.topic = topic;
  c.encoding = encoding;
  if (schema > 0 && schema <= schemas_.size()) {
    c.schema_name = schemas_[schema - 1u][0];
    c.schema_encoding = schemas_[schema - 1u][1];
    c.schema = schemas_[schema - 1u][2];
  }
  channels_.push_back(std::move(c));
  return id;
}

// every message goes to the file and, if someone listens, to the tap
void Recorder::out(std::uint16_t channel, std::uint64_t log_time, std::string_view bytes) {
  writer_->write(channel, sequence_++, log_time, log_time, bytes);
  if (tap_ && tap_->wants(channel)) tap_->message(channel, log_time, bytes);
}

bool Recorder::open_without_file(std::string* error) {
  keep_file_ = false;
  return open("/dev/null", error);
}

void Recorder::commands(const StepCommands& commands, std::int64_t time_ns) {
  staging_.clear();
  encode_step_commands(commands, staging_);
  push(ItemKind::commands, commands.step, time_ns);
}

void Recorder::StepItem::take_sensors(const hal::DeviceBank& bank) {
  sensors.clear();
  for (std::size_t d = 0; d < bank.size() && d <= 0xFFFF; ++d) {
    const hal::KindInfo& info = hal::kind_info(bank.spec(d).kind);
    if (info.actuator || !bank.fresh(d)) continue;
    const hal::Sample& s = bank.sample(d);
    SensorReading& r = sensors.emplace_back();
    r.device = static_cast<std::uint16_t>(d);
    r.valid = s.valid;
    r.channels = static_cast<std::uint8_t>(info.channels);
    r.ch = s.ch;
    // what the wire carries (the depth sensor: absolute pressure from density * |g|)
    if (info.wire_form) info.wire_form(bank.spec(d), r.ch.data());
  }
}

// under the lock: the next ring slot to fill, or nullptr when the ring is full (the item is
// dropped and counted, or waited for with set_wait_when_full)
Recorder::Slot* Recorder::claim_slot(std::unique_lock<std::mutex>& lock) {
  if (count_ == ring_.size() && wait_when_full_ && thread_.joinable())
    room_.wait(lock, [this] { return count_ < ring_.size(); });
  if (count_ == ring_.size()) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  Slot& slot = ring_[head_];
  head_ = (head_ + 1) % ring_.size();
  ++count_;
  return &slot;
}

void Recorder::push(ItemKind kind, std::uint64_t step, std::int64_t time_ns) {
  {
    std::unique_lock lock(mutex_);
    Slot* slot = claim_slot(lock);
    if (!slot) return;
    slot->kind = kind;
    slot->step = step;
    slot->time_ns = time_ns;
    slot->keyframe = -1;
    if (kind == ItemKind::step)
      std::swap(slot->step_item, step_staging_);
    else
      slot->bytes.swap(staging_);
    // the writer polls every few milliseconds; waking it for every step would cost the
    // loop a system call and a context switch per step
    if (count_ * 4 < ring_.size()) return;
  }
  wake_.notify_one();
}

std::string* Recorder::keyframe_buffer() {
  std::unique_lock lock(mutex_);
  auto free_buffer = [this] {
    for (std::size_t i = 0; i < keyframes_.size(); ++i)
      if (!keyframe_queued_[i]) return static_cast<int>(i);
    return -1;
  };
  int i = free_buffer();
  if (i < 0 && wait_when_full_ && thread_.joinable()) {
    wake_.notify_one();  // the writer may be sleeping out its poll interval
    room_.wait(lock, [&] { return (i = free_buffer()) >= 0; });
  }
  if (i < 0) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  std::string& b = keyframes_[static_cast<std::size_t>(i)];
  b.clear();
  return &b;
}

void Recorder::push_keyframe(std::string* buffer, std::uint64_t step, std::int64_t time_ns) {
  const auto index = static_cast<std::size_t>(buffer - keyframes_.data());
  {
    std::unique_lock lock(mutex_);
    // the free buffers grow to this keyframe's size now (the first keyframe, in the warm-up),
    // not the first time a slow writer makes the loop take one of them
    for (std::size_t j = 0; j < keyframes_.size(); ++j)
      if (j != index && !keyframe_queued_[j] && keyframes_[j].capacity() < buffer->size())
        keyframes_[j].reserve(buffer->size() + buffer->size() / 2);
    Slot* slot = claim_slot(lock);
    if (!slot) return;
    slot->kind = ItemKind::keyframe;
    slot->step = step;
    slot->time_ns = time_ns;
    slot->keyframe = static_cast<int>(index);
    keyframe_queued_[index] = 1;
    // wake the writer when the ring is a quarter full, or when half the keyframe buffers
    // wait for it: at rtf 0 keyframes can come faster than the writer's poll, and a loop
    // that finds none free would wait out the rest of that poll (docs/performance.md)
    std::size_t queued = 0;
    for (char q : keyframe_queued_) queued += q ? 1 : 0;
    if (count_ * 4 < ring_.size() && queued * 2 < keyframes_.size()) return;
  }
  wake_.notify_one();
}

void Recorder::event(std::uint64_t step, std::int64_t time_ns, int level, const std::string& source,
                     const std::string& text) {
  staging_ = json_text(json{{"level", level}, {"name", source}, {"message", text}});
  push(ItemKind::event, step, time_ns);
}

void Recorder::writer_loop() {
  const auto flush_every = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(scenario_.recording.flush_interval_s));
  // how long queued items may wait for the writer when the queue is not filling up
  constexpr auto poll = std::chrono::milliseconds(5);
  auto next_flush = std::chrono::steady_clock::now() + flush_every;
  // this buffer joins the ring at the first swap and reaches the loop later: size it like
  // the ring's, or the loop would grow it
  Slot item;
  reserve(item.step_item);
  for (;;) {
    bool took = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_until(lock, std::min(next_flush, std::chrono::steady_clock::now() + poll),
                       [this] { return count_ > 0 || closing_; });
      if (count_ == 0 && closing_) return;
      if (count_ > 0) {
        Slot& slot = ring_[tail_];
        std::swap(item, slot);
        tail_ = (tail_ + 1) % ring_.size();
        --count_;
        took = true;
      }
    }
    if (took && wait_when_full_) room_.notify_one();
    // (nothing taken: the poll ran out; the flush below still runs)
    if (took && item.keyframe >= 0) {
      // a keyframe's bytes stay in their own buffer; give it back once written
      write_item(item);
      written_.fetch_add(1, std::memory_order_relaxed);
      {
        std::lock_guard lock(mutex_);
        keyframe_queued_[static_cast<std::size_t>(item.keyframe)] = 0;
      }
      item.keyframe = -1;
      item.bytes.clear();
      if (wait_when_full_) room_.notify_one();
    } else if (took && (item.kind == ItemKind::step || !item.bytes.empty())) {
      write_item(item);
      written_.fetch_add(1, std::memory_order_relaxed);
    }
    // bound what a SIGKILL can lose: the open chunk is written at least this often
    if (std::chrono::steady_clock::now() >= next_flush) {
      writer_->flush_chunk();
      next_flush = std::chrono::steady_clock::now() + flush_every;
    }
    // the file cannot be written any more (a full disk, a size limit): said once, for the
    // loop to act on (recording.on_write_error); the writer writes nothing after it
    if (!write_failed_.load(std::memory_order_relaxed) && !writer_->ok()) {
      {
        std::lock_guard lock(mutex_);
        write_error_ = writer_->error();
      }
      write_failed_.store(true, std::memory_order_release);
    }
  }
}

std::string Recorder::write_error() const {
  std::lock_guard lock(mutex_);
  return write_error_;
}

void Recorder::write_item(Slot& item) {
  const auto log_time = static_cast<std::uint64_t>(item.time_ns);
  switch (item.kind) {
    case ItemKind::keyframe:
      out(ch_keyframe_, log_time,
          item.keyframe >= 0 ? keyframes_[static_cast<std::size_t>(item.keyframe)] : item.bytes);
      return;
    case ItemKind::summary: out(ch_summary_, log_time, item.bytes); return;
    case ItemKind::commands: out(ch_commands_, log_time, item.bytes); return;
    case ItemKind::event: {
      out(ch_events_, log_time, item.bytes);
      json e = json::parse(item.bytes, nullptr, false);
      if (!e.is_discarded())
        out(ch_log_, log_time,
            json_text(json{{"timestamp", stamp(item.time_ns)},
                           {"level", e["level"]},
                           {"message", e["message"]},
                           {"name", e["name"]},
                           {"file", ""},
                           {"line", 0}}));
      return;
    }
    case ItemKind::step: break;
  }

  // a step item: the binary record for replay, then the derived views (the item stays this
  // thread's until its next swap with the ring)
  StepItem& step = item.step_item;
  step.record.state_hash = hash_state(step.actual);  // S_{k+1}, hashed here rather than on the loop
  // log time of step k's record: t_{k+1}, when its result exists
  const std::uint64_t t = log_time + static_cast<std::uint64_t>(scenario_.loop.period_ns);
  step_bytes_.clear();
  encode_step(step.record, step_bytes_);
  out(ch_step_, t, step_bytes_);
  const WorldModel& m = scenario_.model;
  if (m.bodies.size() <= scenario_.recording.state_every_step_max_bodies) {
    state_bytes_.clear();
    encode_state(step.actual, state_bytes_);
    out(ch_state_, t, state_bytes_);
  }
  if (step.actual.bodies.size() != m.bodies.size() || step.projected.bodies.size() != m.bodies.size()) return;
  write_views(t, step);
  if (ch_actuators_) write_actuators(t, step.record);
  write_sensors(t, step);
}
bool Recorder::close(const nlohmann::json& summary, std::string* error) {
  if (thread_.joinable()) {
    staging_ = json_text(summary);
    // the summary must not be dropped: wait for room if the ring is full
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (count_ < ring_.size()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    push(ItemKind::summary, 0,
         summary.value("sim_time_s", 0.0) > 0 ? static_cast<std::int64_t>(summary.value("sim_time_s", 0.0) * 1e9) : 0);
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  return writer_->close(error);
}

}  // namespace tether::runtime
