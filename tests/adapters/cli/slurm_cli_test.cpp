// SPDX-License-Identifier: Apache-2.0
// A campaign on a real Slurm: a one-host cluster from Debian's slurmctld, slurmd and munge
// (tests/slurm/one_host_cluster.sh, every file in the test's folder), the shipped campaign
// submitted exactly as docs/campaigns.md tells a user (scripts/slurm_campaign.sh: a job
// array of slices, then the merge job with --dependency=afterany), its merged results
// compared run by run with a local run of the same campaign.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "test_paths.hpp"

namespace {

using tether::cli_test::run;
using tether::cli_test::temp_dir;
using tether::cli_test::tether_exe;

const std::string source = TETHER_SOURCE_DIR;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json campaign_json(const std::string& dir) {
  const std::string text = slurp(dir + "/campaign.json");
  REQUIRE_MESSAGE(!text.empty(), (dir + "/campaign.json is missing or empty"));
  return nlohmann::json::parse(text);
}

// The cluster for one test: started in `dir`, stopped (by pid) when the test ends.
struct Cluster {
  std::string dir;
  std::string conf;
  explicit Cluster(std::string d) : dir(std::move(d)) {
    // one CPU: the slices run one at a time, as the local run they are compared with does
    // (the firmware's deadline is wall time; two firmware pairs at once on a loaded 2-core
    // machine make misses the expectations count)
    const auto r = run(source + "/tests/slurm/one_host_cluster.sh start " + dir + "/cluster 1");
    REQUIRE_MESSAGE(r.exit_code == 0,
                    ("the one-host Slurm cluster did not start: " + r.out + slurp(dir + "/cluster/log/slurmctld.log") +
                     slurp(dir + "/cluster/log/slurmd.log")));
    conf = r.out.substr(0, r.out.find('\n'));
  }
  ~Cluster() { run(source + "/tests/slurm/one_host_cluster.sh stop " + dir + "/cluster"); }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
};

// the same runs, with the same verdicts, exit codes and outcomes, in the same order
void check_same_runs(const nlohmann::json& local, const nlohmann::json& merged) {
  CHECK(local["fingerprint"] == merged["fingerprint"]);
  REQUIRE(local["runs"].size() == merged["runs"].size());
  for (std::size_t i = 0; i < local["runs"].size(); ++i) {
    CAPTURE(i);
    CHECK(local["runs"][i]["name"] == merged["runs"][i]["name"]);
    CHECK(local["runs"][i]["args"] == merged["runs"][i]["args"]);
    CHECK(local["runs"][i]["verdict"] == merged["runs"][i]["verdict"]);
    CHECK(local["runs"][i]["exit_code"] == merged["runs"][i]["exit_code"]);
    CHECK(local["runs"][i]["outcome"] == merged["runs"][i]["outcome"]);
    // a failed expectation fails at the same step (the runs are deterministic)
    REQUIRE(local["runs"][i]["failures"].size() == merged["runs"][i]["failures"].size());
    for (std::size_t f = 0; f < local["runs"][i]["failures"].size(); ++f)
      CHECK(local["runs"][i]["failures"][f]["first_failing_step"] ==
            merged["runs"][i]["failures"][f]["first_failing_step"]);
  }
}

}  // namespace

TEST_CASE("slurm: the shipped campaign as a job array of 3 slices and a merge job equals a local run, run by run") {
  for (const char* tool : {"munged", "slurmctld", "slurmd", "sbatch", "scontrol"})
    REQUIRE_MESSAGE(
        run(std::string("PATH=$PATH:/usr/sbin command -v ") + tool).exit_code == 0,
        (std::string(tool) + " is missing: scripts/deps.sh test installs slurmctld, slurmd, slurm-client, munge"));
  const std::string dir = temp_dir("slurm");
  {
    const Cluster cluster(dir);
    const std::string env = "SLURM_CONF=" + cluster.conf + " TETHER=" + tether_exe + " ";
    const std::string seeds = " --campaign-set 'seeds={first: 1, count: 2}'";
    // passes: 10 runs (2 seeds x 5 fault sets) in 3 slices
    const auto slurm = run("cd " + dir + " && " + env + source + "/scripts/slurm_campaign.sh --wait --out " + dir +
                           "/dh " + source + "/config/campaigns/depth_hold.yaml 3" + seeds);
    CAPTURE(slurm.out);
    CHECK(slurm.exit_code == 0);
    for (int k = 1; k <= 3; ++k)
      CHECK(slurm.out.find("slice ArrayTaskId=" + std::to_string(k) + "\tJobState=COMPLETED\tExitCode=0:0") !=
            std::string::npos);
    const auto local = run(tether_exe + " test " + source + "/config/campaigns/depth_hold.yaml -q -j 1 --out " + dir +
                           "/local" + seeds);
    CHECK(local.exit_code == 0);
    const auto merged = campaign_json(dir + "/dh/all");
    CHECK(merged["runs"].size() == 10);
    check_same_runs(campaign_json(dir + "/local"), merged);
    // each slice holds its own runs, written by its own task
    CHECK(campaign_json(dir + "/dh/shard-2")["shard"] == nlohmann::json({{"k", 2}, {"n", 3}}));
    CHECK(campaign_json(dir + "/dh/shard-1")["runs"].size() == 4);
    CHECK(std::filesystem::exists(dir + "/dh/all/junit.xml"));
    CHECK(slurp(dir + "/dh/all/index.html").find("10 of 10 runs passed") != std::string::npos);

    // fails: the broken firmware build, 3 runs in 2 slices; every task FAILED with tether's
    // exit code 6, and the merge runs anyway (afterany) and says which runs failed
    const auto broken = run("cd " + dir + " && " + env + source + "/scripts/slurm_campaign.sh --wait --out " + dir +
                            "/broken " + source + "/config/campaigns/depth_hold_broken.yaml 2");
    CAPTURE(broken.out);
    CHECK(broken.exit_code == 6);
    for (int k = 1; k <= 2; ++k)
      CHECK(broken.out.find("slice ArrayTaskId=" + std::to_string(k) + "\tJobState=FAILED\tExitCode=6:0") !=
            std::string::npos);
    const auto local_broken =
        run(tether_exe + " test " + source + "/config/campaigns/depth_hold_broken.yaml -q -j 1 --out " + dir + "/lb");
    CHECK(local_broken.exit_code == 6);
    check_same_runs(campaign_json(dir + "/lb"), campaign_json(dir + "/broken/all"));
    CHECK(slurp(dir + "/broken/all/index.html").find("0 of 3 runs passed, 3 failed") != std::string::npos);

    // what a user gets wrong: no such campaign, a bad slice count; nothing is submitted
    const auto missing = run(env + source + "/scripts/slurm_campaign.sh " + dir + "/absent.yaml 3");
    CHECK(missing.exit_code == 2);
    CHECK(missing.out.find("absent.yaml: no such campaign file") != std::string::npos);
    const auto zero =
        run(env + source + "/scripts/slurm_campaign.sh " + source + "/config/campaigns/depth_hold.yaml 0");
    CHECK(zero.exit_code == 2);
    CHECK(zero.out.find("SLICES must be a positive number") != std::string::npos);
    const auto queue = run("SLURM_CONF=" + cluster.conf + " squeue -h | wc -l");
    CHECK(queue.out == "0\n");
  }
  std::filesystem::remove_all(dir);
}
