// SPDX-License-Identifier: Apache-2.0
// Broad phase: which bounding boxes overlap. Three interchangeable methods that return the
// same pairs in the same order (ascending (a, b)), so the choice changes speed, never results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tether/physics/collision.hpp"
#include "tether/physics/world_model.hpp"

namespace tether::runtime {

/// Two overlapping boxes by index, a < b.
struct BoxPair {
  std::int32_t a = 0;
  std::int32_t b = 0;
  friend bool operator==(const BoxPair&, const BoxPair&) = default;
};

/// Finds overlapping pairs among a list of boxes. Keeps its buffers between calls, so after
/// the first call with a given count it does not allocate.
class BroadPhase {
 public:
  /// `grid` tests every pair below this many boxes (quicker than building a grid there).
  static constexpr std::size_t grid_from_boxes = 65;
  /// Replaces `pairs` with every overlapping pair (a < b), sorted by (a, b).
  void find_pairs(const std::vector<Aabb>& boxes, BroadPhaseKind kind, std::vector<BoxPair>& pairs);
  /// Replaces `out` with the indices (ascending) of the boxes that overlap `box`, using what
  /// the last find_pairs call built over the same, unchanged `boxes`.
  void query(const std::vector<Aabb>& boxes, const Aabb& box, std::vector<std::int32_t>& out) const;

 private:
  void grid(const std::vector<Aabb>& boxes, std::vector<BoxPair>& pairs);
  std::uint32_t build_grid(const std::vector<Aabb>& boxes);
  void collect_grid_pairs(const std::vector<Aabb>& boxes, std::uint32_t buckets, std::vector<BoxPair>& pairs);
  void sweep(const std::vector<Aabb>& boxes, std::vector<BoxPair>& pairs);
  void brute(const std::vector<Aabb>& boxes, std::vector<BoxPair>& pairs);
  void radix_sort_pairs(std::vector<BoxPair>& pairs, std::size_t n);

  // the last grid, for query()
  bool grid_built_ = false;
  bool dense_ = false;
  Vec3 lo_ = Vec3::Zero();
  double inv_cell_ = 1;
  std::int64_t dims_[3] = {1, 1, 1};
  std::uint32_t mask_ = 0;

  struct Cell {
    std::int64_t x, y, z;
    friend bool operator==(const Cell&, const Cell&) = default;
  };
  std::uint32_t bucket_index(const Cell& c) const;  // the last grid's bucket of a cell
  std::vector<double> extents_;
  std::vector<Cell> cells_;
  std::vector<std::uint32_t> bucket_of_;
  std::vector<std::uint32_t> bucket_start_;
  std::vector<std::int32_t> sorted_;
  std::vector<Aabb> sorted_boxes_;
  std::vector<std::uint32_t> cursor_;
  std::vector<BoxPair> radix_tmp_;
  std::vector<std::uint32_t> radix_count_;
  std::vector<std::int32_t> large_;
  std::vector<std::int32_t> local_;
  std::vector<std::uint8_t> is_large_;
  struct Key {
    double min;
    std::int32_t index;
  };
  std::vector<Key> keys_;
};

}  // namespace tether::runtime
