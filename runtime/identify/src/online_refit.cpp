// SPDX-License-Identifier: Apache-2.0
// The online `estimate` processor's batch refit (tether/feedback/batch_refit.hpp): the trial so far,
// captured step by step as load_trial captures a recording, fitted by fit() on a worker thread
// of its own. Deterministic: a fit sees only the copy made when it started, runs on one thread,
// and the processor takes its result at a fixed step, waiting for it if it is late; a replay
// of the session fits the same data at the same step and gets the same bits.
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "tether/identify/identify.hpp"
#include "tether/feedback/batch_refit.hpp"
#include "least_squares.hpp"
#include "trial_capture.hpp"

namespace tether::identify {

namespace {

class OnlineRefit final : public runtime::BatchRefit {
 public:
  OnlineRefit(const runtime::WorldModel& model, const runtime::RefitOptions& o) : options_(o) {
    live_.scenario.model = model;
    live_.body = o.body;
    live_.vehicle = model.bodies[static_cast<std::size_t>(o.body)].vehicle;
    live_.dt_s = o.dt_s;
    live_.path = "(this session)";
    // the history's room, taken now (each step's copy of the twin's bodies allocates until the
    // history is first full; then dropped steps lend theirs: tether/feedback/batch_refit.hpp)
    const std::size_t room = o.history_steps + 2;
    live_.samples.reserve(room);
    live_.twin.reserve(room);
    job_.samples.reserve(room);
    job_.twin.reserve(room);
    fit_.window_steps = 50;
    fit_.delay_steps = o.input_delay_steps;
    fit_.position_stddev_m = o.position_stddev_m;
    fit_.velocity_stddev_m_s = o.velocity_stddev_m_s;
    fit_.orientation_stddev_rad = o.active[runtime::vp::angular_drag] ? o.orientation_stddev_rad : 0;
    fit_.added_mass_stddev = o.added_mass_stddev;
    fit_.estimate_lag = o.active[runtime::vp::thruster_lag];
    // the estimate's groups; the added mass, online only considered, is fitted against its prior
    fit_.estimate_added_mass = o.active[runtime::vp::added_mass];
    fit_.estimate_angular_drag = o.active[runtime::vp::angular_drag];
    for (std::size_t i = 0; i < runtime::vp::count; ++i) fit_.held[i] = !o.active[i];
    fit_.threads = 1;  // one thread: the same sums in the same order every time
    worker_ = std::thread([this] { work(); });
  }
  ~OnlineRefit() override {
    {
      const std::lock_guard lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }

  void capture(const runtime::FeedbackContext& ctx, const runtime::WorldState& state,
               const runtime::BodyWrench& input) override {
    if (!attached_) {
      capture_.attach(&live_, ctx.step, ctx.devices);
      attached_ = true;
      if (!live_.thrusters.empty()) {
        const std::size_t room = (options_.history_steps + 2) * live_.thrusters.size();
        for (auto* v : {&live_.thruster_command, &live_.thruster_speed, &job_.thruster_command, &job_.thruster_speed,
                        &job_.thruster_thrust})
          v->reserve(room);
      }
      job_.thrusters = live_.thrusters;
    }
    // full: the oldest half goes (moved, not freed: the room stays)
    if (ctx.step >= capture_.first() + options_.history_steps) capture_.drop_front(options_.history_steps / 2);
    capture_.capture(ctx, state, &input);
  }

  std::size_t captured() const override { return live_.twin.size(); }

  bool start() override {
    const std::lock_guard lock(mutex_);
    if (pending_) return false;
    // the copy the fit sees (into the room taken at construction)
    job_.samples.assign(live_.samples.begin(), live_.samples.end());
    job_.thruster_command.assign(live_.thruster_command.begin(), live_.thruster_command.end());
    job_.thruster_speed.assign(live_.thruster_speed.begin(), live_.thruster_speed.end());
    job_.twin.resize(live_.twin.size());
    for (std::size_t t = 0; t < live_.twin.size(); ++t) job_.twin[t].assign(live_.twin[t].begin(), live_.twin[t].end());
    job_.scenario.model = live_.scenario.model;  // the same model: its storage is reused
    job_.body = live_.body, job_.vehicle = live_.vehicle, job_.dt_s = live_.dt_s, job_.path = live_.path;
    pending_ = true;
    done_ = false;
    wake_.notify_all();
    return true;
  }

  bool ready() override {
    const std::lock_guard lock(mutex_);  // the worker holds it only to take a job and hand its result
    return pending_ && done_;
  }

  bool finish(runtime::RefitResult& out, std::string* why) override {
    std::unique_lock lock(mutex_);
    if (!pending_) {
      if (why) *why = "no refit was started";
      return false;
    }
    done_wake_.wait(lock, [this] { return done_; });
    pending_ = false;
    if (!error_.empty()) {
      if (why) *why = error_;
      return false;
    }
    out = result_;
    return true;
  }

 private:
  void work() {
    for (;;) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return quit_ || (pending_ && !done_); });
      if (quit_) return;
      lock.unlock();
      runtime::RefitResult r;
      std::string error;
      try {
        finish_capture(job_);
        const FitResult f = fit({job_}, fit_);
        r.theta = f.theta;
        r.windows = f.windows;
        r.converged = f.converged;
        for (std::size_t i = 0; i < runtime::vp::count; ++i)
          for (std::size_t j = 0; j < runtime::vp::count; ++j)
            r.covariance[i][j] = f.parameters[i].stddev * f.parameters[j].stddev * (i == j ? 1.0 : f.correlation[i][j]);
      } catch (const std::exception& e) {
        error = e.what();
      }
      lock.lock();
      result_ = r;
      error_ = error;
      done_ = true;
      done_wake_.notify_all();
    }
  }

  runtime::RefitOptions options_;
  FitOptions fit_;
  Trial live_, job_;  // what the session captures; the copy a fit works on
  TrialCapture capture_;
  bool attached_ = false;
  std::mutex mutex_;
  std::condition_variable wake_, done_wake_;
  bool pending_ = false, done_ = false, quit_ = false;
  runtime::RefitResult result_;
  std::string error_;
  std::thread worker_;
};

}  // namespace

void register_online_refit() {
  runtime::set_batch_refit_factory(
      [](const runtime::WorldModel& model, const runtime::RefitOptions& o) {
        return std::make_unique<OnlineRefit>(model, o);
      },
      // a scenario with a refit opens the solver's module when it is loaded: a module that is
      // not there is said then, not at the first refit minutes into the trial
      [] { return lsq::module_problem(); });
}

}  // namespace tether::identify
