// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/broadphase.hpp"

#include <doctest/doctest.h>

#include <random>

using namespace tether::runtime;

namespace {

std::vector<Aabb> random_boxes(int n, double spread, double size_min, double size_max, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-spread, spread), s(size_min, size_max);
  std::vector<Aabb> boxes;
  for (int i = 0; i < n; ++i) {
    const Vec3 c(u(rng), u(rng), u(rng));
    const Vec3 e(s(rng), s(rng), s(rng));
    boxes.push_back({c - e, c + e});
  }
  return boxes;
}

std::vector<BoxPair> reference(const std::vector<Aabb>& boxes) {
  std::vector<BoxPair> out;
  for (std::size_t i = 0; i < boxes.size(); ++i)
    for (std::size_t j = i + 1; j < boxes.size(); ++j)
      if (boxes[i].overlaps(boxes[j])) out.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(j)});
  return out;
}

}  // namespace

TEST_CASE("grid, sweep-and-prune and brute force return the same sorted pairs") {
  struct Case {
    int n;
    double spread, smin, smax;
  };
  // dense crowd, sparse scatter (hashed grid), mixed sizes with a few giants
  for (const Case& c : {Case{500, 2.0, 0.02, 0.1}, Case{300, 60.0, 1.0, 4.0}, Case{400, 3.0, 0.01, 0.05}}) {
    CAPTURE(c.n);
    std::vector<Aabb> boxes = random_boxes(c.n, c.spread, c.smin, c.smax, static_cast<std::uint64_t>(c.n));
    if (c.n == 400) {
      boxes[7] = {Vec3(-2, -2, -2), Vec3(2, 2, 2)};
      boxes[123] = {Vec3(-0.5, -10, -0.5), Vec3(0.5, 10, 0.5)};
      boxes[399] = Aabb::infinite();
    }
    const auto want = reference(boxes);
    CHECK(!want.empty());
    BroadPhase bp;
    std::vector<BoxPair> got;
    for (BroadPhaseKind kind : {BroadPhaseKind::grid, BroadPhaseKind::sweep_and_prune, BroadPhaseKind::brute_force}) {
      bp.find_pairs(boxes, kind, got);
      CHECK(got == want);
      // again with the buffers warm (and the sweep order kept from the last call)
      bp.find_pairs(boxes, kind, got);
      CHECK(got == want);
    }
  }
}

TEST_CASE("broad phase edge cases: none, one, touching faces") {
  BroadPhase bp;
  std::vector<BoxPair> pairs{{1, 2}};
  bp.find_pairs({}, BroadPhaseKind::grid, pairs);
  CHECK(pairs.empty());
  bp.find_pairs({Aabb{Vec3::Zero(), Vec3::Ones()}}, BroadPhaseKind::grid, pairs);
  CHECK(pairs.empty());
  // boxes that share a face overlap (closed intervals)
  std::vector<Aabb> boxes;
  // more than a grid's lower limit, so the grid itself is built
  const int n = static_cast<int>(BroadPhase::grid_from_boxes) + 15;
  for (int i = 0; i < n; ++i) boxes.push_back({Vec3(i, 0, 0), Vec3(i + 1, 1, 1)});
  for (BroadPhaseKind kind : {BroadPhaseKind::grid, BroadPhaseKind::sweep_and_prune}) {
    bp.find_pairs(boxes, kind, pairs);
    CHECK(pairs.size() == static_cast<std::size_t>(n - 1));
    CHECK(pairs.front() == BoxPair{0, 1});
  }
}
