// SPDX-License-Identifier: Apache-2.0
// Records a session to MCAP off the loop thread. The loop hands over each step as bytes
// through a bounded ring (a swap of pre-grown buffers under a short lock); a writer thread
// turns them into channels (docs/recording.md). A full ring drops the step and counts it;
// it never blocks the loop.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tether/hal/sensors.hpp"
#include "tether/recording/recording.hpp"
#include "tether/scenario/scenario.hpp"

namespace tether::hal {
class DeviceBank;
}

namespace tether::runtime {

namespace mcap {
class Writer;
}

/// A channel of the recording, as a live server advertises it.
struct RecordedChannel {
  std::uint16_t id = 0;
  std::string topic;
  std::string encoding;         // "json" or "protobuf"
  std::string schema_name;      // empty for channels without a schema
  std::string schema_encoding;  // "jsonschema" or empty
  std::string schema;
};

/// Sees every message the recorder writes, on the recorder's writer thread (never the
/// loop's): the live server publishes the recording's channels through it. Must not block.
class RecorderTap {
 public:
  virtual ~RecorderTap() = default;
  /// In open(), once the channels exist and before the first message.
  virtual void opened(const std::vector<RecordedChannel>& channels) { (void)channels; }
  /// Cheap check before a message is handed over (e.g. "does anyone subscribe to it").
  virtual bool wants(std::uint16_t channel) const = 0;
  virtual void message(std::uint16_t channel, std::uint64_t log_time_ns, std::string_view bytes) = 0;
};

/// What a recorder records of a session besides its scenario, in the session's order. A
/// session's are built in one place: runtime::recorder_inputs(session)
/// (loop/recorder_inputs.hpp); the recording room knows nothing of sessions.
struct RecorderInputs {
  std::vector<std::string> endpoint_names;
  /// processor_fields[i]: feedback processor i's name and the values it records each step.
  std::vector<std::pair<std::string, std::vector<std::string>>> processor_fields;
  /// Each endpoint's safe reply (Endpoint::safe_reply), in endpoint order; empty: none.
  /// Recorded once, so that replay applies what the `safe` policy applied.
  std::vector<Reply> safe_replies;
  /// Per endpoint, the Foxglove views of its wire frames (Endpoint::wire_topics); may be
  /// shorter than endpoint_names (the rest have none).
  std::vector<std::vector<WireTopic>> wire_topics;
  /// The steps the session is to take; 0: not known. A short run reserves buffers for the
  /// ring slots it can use, not for all of `recording.queue_slots`.
  std::uint64_t steps = 0;
};

class Recorder {
 public:
  enum class ItemKind : std::uint8_t { step = 1, keyframe = 2, event = 3, summary = 4, commands = 5 };

  /// A session's recorder: `inputs` from runtime::recorder_inputs(session).
  Recorder(const Scenario& scenario, RecorderInputs inputs);
  /// A recorder without a session (tests, tools): endpoint names and processor fields as
  /// given, no safe replies.
  Recorder(const Scenario& scenario, std::vector<std::string> endpoint_names,
           std::vector<std::pair<std::string, std::vector<std::string>>> processor_fields);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  /// Creates the file, writes the scenario, schemas, channels and the scene; starts the
  /// writer thread. False with a reason on failure.
  [[nodiscard]] bool open(const std::string& path, std::string* error);
  /// Same channels and writer thread, but nothing is kept (for a live server when the
  /// scenario says `recording: {enabled: false}`).
  [[nodiscard]] bool open_without_file(std::string* error);
  /// Before open(): every message written is also handed to `tap` (writer thread).
  void set_tap(RecorderTap* tap) { tap_ = tap; }
  /// After open(): the channels, in id order.
  const std::vector<RecordedChannel>& channels() const { return channels_; }
  /// Loop thread: the operator commands a step applied (rare; allocates).
  void commands(const StepCommands& commands, std::int64_t time_ns);

  /// Loop thread: the staging buffer for the next item; fill it, then push().
  std::string& staging() { return staging_; }
  /// For sessions that are not paced (real-time factor 0): when the queue is full, push()
  /// waits for the writer instead of dropping the item, so the recording stays complete
  /// and the loop runs as fast as the recorder allows. Off by default: a paced loop must
  /// never wait for the disk. The session sets it from its real-time factor, also when an
  /// operator changes that factor during the run (Session::set_recorder).
  void set_wait_when_full(bool wait) { wait_when_full_.store(wait, std::memory_order_relaxed); }
  bool wait_when_full() const { return wait_when_full_.load(std::memory_order_relaxed); }
  /// Loop thread: hands the staging buffer over (O(1) swap). Drops and counts if full
  /// (or waits, see set_wait_when_full).
  void push(ItemKind kind, std::uint64_t step, std::int64_t time_ns);
  /// Loop thread: a buffer for the next keyframe (cleared), or nullptr when every keyframe
  /// buffer is still queued for the writer (the keyframe is then dropped and counted; with
  /// set_wait_when_full it waits instead). Keyframes are far larger than step items, so
  /// they travel in buffers of their own that are reused (as many as keyframes fit in the
  /// ring's span, 4 to 64): once each has held a keyframe, writing keyframes allocates nothing.
  std::string* keyframe_buffer();
  /// Loop thread: queues the keyframe written into `buffer` (from keyframe_buffer()).
  void push_keyframe(std::string* buffer, std::uint64_t step, std::int64_t time_ns);
  /// Rare events (misses, faults, firmware log lines): level 1 debug .. 5 fatal.
  void event(std::uint64_t step, std::int64_t time_ns, int level, const std::string& source, const std::string& text);

  /// Writes the summary, drains the ring, finalizes the file. False with a reason on failure.
  [[nodiscard]] bool close(const nlohmann::json& summary, std::string* error);

  /// True once the file could not be written (a full disk, RLIMIT_FSIZE, an I/O error):
  /// nothing more reaches it; what is in it up to its last whole chunk stays readable. Any
  /// thread; the loop looks every step (one atomic load).
  bool write_failed() const { return write_failed_.load(std::memory_order_acquire); }
  /// What failed, naming the file and the error ("write to rec.mcap failed at offset N: No
  /// space left on device"); empty while write_failed() is false.
  std::string write_error() const;
  std::uint64_t dropped() const { return dropped_.load(); }
  std::uint64_t items_written() const { return written_.load(); }
  const std::string& path() const { return path_; }
  std::uint64_t bytes_written() const;

  /// A sensor's new sample as the endpoints were sent it (after noise, delay, dropout and
  /// faults; a depth sensor's second channel as the absolute pressure on the wire).
  struct SensorReading {
    std::uint16_t device = 0;
    bool valid = false;
    std::uint8_t channels = 0;
    std::array<double, hal::max_channels> ch{};
  };
  /// One step as the loop hands it over: plain copies of what the step consumed and
  /// produced. The writer thread hashes, encodes and derives the views from it, so the
  /// loop's share of recording is a few copies (docs/performance.md). The items' buffers
  /// travel round the ring and are reused: once the ring has gone round, the loop's copies
  /// allocate nothing.
  struct StepItem {
    StepRecord record;  // state_hash is computed by the writer: hash_state(actual)
    WorldState actual, projected;
    std::vector<double> values;  // the feedback processors' record fields, in order
    std::vector<SensorReading> sensors;
    /// Copies each sensor's new sample of this step from the bank (after sensing).
    void take_sensors(const hal::DeviceBank& bank);
  };
  /// Loop thread: the next step item to fill, then push(ItemKind::step, ...).
  StepItem& step_staging() { return step_staging_; }

 private:
  struct Slot {
    ItemKind kind = ItemKind::step;
    std::uint64_t step = 0;
    std::int64_t time_ns = 0;
    std::string bytes;   // every kind but a step
    StepItem step_item;  // a step
    int keyframe = -1;   // a keyframe item's buffer in keyframes_ (its bytes stay there)
  };
  // sizes a step item's buffers for this scenario (the loop's copies then allocate nothing)
  void reserve(StepItem& item) const;
  Slot* claim_slot(std::unique_lock<std::mutex>& lock);
  void writer_loop();
  void write_item(Slot& item);
  void write_views(std::uint64_t log_time_ns, const StepItem& step);
  void write_measured(std::uint64_t log_time_ns, const StepItem& step);
  void write_vehicles(std::uint64_t log_time_ns, const StepItem& step);
  void write_endpoints(std::uint64_t log_time_ns, const StepItem& step);
  void write_feedback(std::uint64_t log_time_ns, const StepItem& step);
  void write_wire(std::uint64_t log_time_ns, const StepItem& step);
  void open_device_channels();
  void write_scene();
  std::uint16_t schema(const std::string& name, const std::string& encoding, const std::string& text);
  std::uint16_t channel(std::uint16_t schema, const std::string& topic, const std::string& encoding);
  void out(std::uint16_t channel, std::uint64_t log_time, std::string_view bytes);

  const Scenario& scenario_;
  std::vector<std::string> endpoint_names_;
  std::vector<std::pair<std::string, std::vector<std::string>>> processor_fields_;
  std::vector<Reply> safe_replies_;
  std::vector<std::vector<WireTopic>> wire_topics_;
  std::unique_ptr<mcap::Writer> writer_;
  std::string path_;
  bool keep_file_ = true;
  RecorderTap* tap_ = nullptr;
  std::vector<RecordedChannel> channels_;
  std::vector<std::array<std::string, 3>> schemas_;  // by id - 1: name, encoding, text

  std::vector<Slot> ring_;
  std::size_t head_ = 0;  // next slot the loop fills
  std::size_t tail_ = 0;  // next slot the writer takes
  std::size_t count_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable room_;             // the writer took an item (set_wait_when_full)
  std::atomic<bool> wait_when_full_{false};  // set by the loop thread, read by both
  bool closing_ = false;
  std::thread thread_;
  std::string staging_;
  StepItem step_staging_;
  // as many keyframe buffers as keyframes fit in the ring's span (4 to 64): a busy writer
  // must not make the loop wait for one while the ring has room
  std::vector<std::string> keyframes_;
  std::vector<char> keyframe_queued_;  // guarded by mutex_

  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<bool> write_failed_{false};
  std::string write_error_;  // guarded by mutex_
  std::atomic<std::uint64_t> written_{0};
  std::uint32_t sequence_ = 0;

  // channel ids
  std::uint16_t ch_step_ = 0, ch_state_ = 0, ch_keyframe_ = 0, ch_timing_ = 0, ch_vehicles_ = 0, ch_events_ = 0,
                ch_summary_ = 0, ch_feedback_ = 0, ch_tf_ = 0, ch_scene_ = 0, ch_log_ = 0, ch_commands_ = 0,
                ch_actuators_ = 0;                                   // 0: the scenario has no actuator
  std::vector<std::uint16_t> ch_pose_, ch_projected_, ch_measured_;  // per vehicle
  std::vector<std::uint16_t> ch_vehicle_state_;                      // per vehicle: `/vehicles/V/state`
  std::vector<std::uint16_t> ch_endpoint_;                           // per endpoint: `/endpoints/NAME`
  std::vector<std::uint16_t> ch_processor_;                          // per processor: `/feedback/NAME`
  std::vector<std::vector<std::uint16_t>> ch_wire_;  // per endpoint, per wire topic: `/endpoints/NAME/SUFFIX`

  // writer-thread scratch, reused from step to step
  std::vector<const Measurement*> measured_;  // per vehicle, this step
  // per device: the channels of its last command from a fresh reply (actuators; -1: none yet)
  std::vector<std::array<double, 6>> actuator_values_;
  std::vector<int> actuator_channels_;
  std::vector<std::string> actuator_names_;  // per device, "vehicle.part.device" (built once)
  void write_actuators(std::uint64_t t, const StepRecord& record);
  // per device: its `/devices/VEHICLE/PART/DEVICE` channel (sensors and actuators; 0: none),
  // and a GPS's `.../fix` (foxglove.LocationFix; 0: not a GPS)
  std::vector<std::uint16_t> ch_sensor_, ch_fix_;
  void write_fix(std::uint64_t t, std::size_t device, const double* enu);
  void write_sensors(std::uint64_t t, const StepItem& step);
  std::string text_, vehicles_text_, item_text_, step_bytes_, state_bytes_;
};

}  // namespace tether::runtime
