// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/broadphase.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tether::runtime {

namespace {

bool finite_box(const Aabb& b) { return b.min.allFinite() && b.max.allFinite(); }

std::uint32_t hash_cell(std::int64_t x, std::int64_t y, std::int64_t z, std::uint32_t mask) {
  const auto h = static_cast<std::uint64_t>(x) * 0x9E3779B185EBCA87ULL ^
                 static_cast<std::uint64_t>(y) * 0xC2B2AE3D27D4EB4FULL ^
                 static_cast<std::uint64_t>(z) * 0x165667B19E3779F9ULL;
  return static_cast<std::uint32_t>((h ^ (h >> 29)) & mask);
}

// insertion sort: near-linear when the order barely changed since the last call
template <typename T, typename Less>
void insertion_sort(std::vector<T>& v, Less less) {
  for (std::size_t i = 1; i < v.size(); ++i) {
    T x = v[i];
    std::size_t j = i;
    while (j > 0 && less(x, v[j - 1])) {
      v[j] = v[j - 1];
      --j;
    }
    v[j] = x;
  }
}

void sort_pairs(std::vector<BoxPair>& pairs) {
  std::sort(pairs.begin(), pairs.end(),
            [](const BoxPair& p, const BoxPair& q) { return p.a != q.a ? p.a < q.a : p.b < q.b; });
}

}  // namespace

void BroadPhase::find_pairs(const std::vector<Aabb>& boxes, BroadPhaseKind kind, std::vector<BoxPair>& pairs) {
  pairs.clear();
  grid_built_ = false;
  if (boxes.size() < 2) return;
  // few boxes: testing every pair is quicker than any set-up (at 100 boxes brute force
  // took 5.8 µs against the grid's 10 µs: docs/physics.md); the same pairs in the same order
  if (boxes.size() <= 8 || (kind == BroadPhaseKind::grid && boxes.size() < grid_from_boxes))
    kind = BroadPhaseKind::brute_force;
  switch (kind) {
    case BroadPhaseKind::grid: grid(boxes, pairs); break;
    case BroadPhaseKind::sweep_and_prune: sweep(boxes, pairs); break;
    case BroadPhaseKind::brute_force: brute(boxes, pairs); break;
  }
}

void BroadPhase::brute(const std::vector<Aabb>& boxes, std::vector<BoxPair>& pairs) {
  const auto n = static_cast<std::int32_t>(boxes.size());
  for (std::int32_t i = 0; i < n; ++i)
    for (std::int32_t j = i + 1; j < n; ++j)
      if (boxes[static_cast<std::size_t>(i)].overlaps(boxes[static_cast<std::size_t>(j)])) pairs.push_back({i, j});
}

void BroadPhase::sweep(const std::vector<Aabb>& boxes, std::vector<BoxPair>& pairs) {
  const auto n = static_cast<std::int32_t>(boxes.size());
  // sweep along the axis where the centres spread most
  Vec3 mean = Vec3::Zero(), sq = Vec3::Zero();
  int counted = 0;
  for (const Aabb& b : boxes) {
    if (!finite_box(b)) continue;
    const Vec3 c = 0.5 * (b.min + b.max);
    mean += c;
    sq += c.cwiseProduct(c);
    ++counted;
  }
  int axis = 0;
  if (counted > 0) {
    const Vec3 var = sq / counted - (mean / counted).cwiseProduct(mean / counted);
    var.maxCoeff(&axis);
  }
  if (keys_.size() != boxes.size()) {
    keys_.resize(boxes.size());
    for (std::int32_t i = 0; i < n; ++i) keys_[static_cast<std::size_t>(i)].index = i;
  }
  for (Key& k : keys_) k.min = boxes[static_cast<std::size_t>(k.index)].min[axis];
  // the order is unique (ties broken by index), so keeping last call's order is only a speed-up
  insertion_sort(keys_, [](const Key& p, const Key& q) { return p.min != q.min ? p.min < q.min : p.index < q.index; });
  for (std::size_t k = 0; k < keys_.size(); ++k) {
    const Aabb& a = boxes[static_cast<std::size_t>(keys_[k].index)];
    const double end = a.max[axis];
    for (std::size_t m = k + 1; m < keys_.size() && keys_[m].min <= end; ++m) {
      const std::int32_t j = keys_[m].index;
      if (a.overlaps(boxes[static_cast<std::size_t>(j)])) {
        const std::int32_t i = keys_[k].index;
        pairs.push_back({std::min(i, j), std::max(i, j)});
      }
    }
  }
  sort_pairs(pairs);
}

std::uint32_t BroadPhase::bucket_index(const Cell& c) const {
  if (dense_) return static_cast<std::uint32_t>(c.x + dims_[0] * (c.y + dims_[1] * c.z));
  return hash_cell(c.x, c.y, c.z, mask_);
}

void BroadPhase::grid(const std::vector<Aabb>& boxes, std::vector<BoxPair>& pairs) {
  const std::uint32_t buckets = build_grid(boxes);
  collect_grid_pairs(boxes, buckets, pairs);
  radix_sort_pairs(pairs, boxes.size());
}

// the grid: cell size, dense or hashed buckets, every ordinary box in its bucket (sorted by
// bucket); the boxes much larger than the median go to large_. Returns the bucket count.
std::uint32_t BroadPhase::build_grid(const std::vector<Aabb>& boxes) {
  const std::size_t n = boxes.size();
  // cell edge: the largest extent among ordinary boxes; boxes much larger than the median
  // (a vehicle among pebbles, an infinite box) are tested against everything instead
  extents_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Aabb& b = boxes[i];
    extents_[i] = finite_box(b) ? (b.max - b.min).maxCoeff() : std::numeric_limits<double>::infinity();
  }
  is_large_.assign(n, 0);
  large_.clear();
  local_.resize(n);
  for (std::size_t i = 0; i < n; ++i) local_[i] = static_cast<std::int32_t>(i);
  const auto mid = local_.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(local_.begin(), mid, local_.end(), [&](std::int32_t p, std::int32_t q) {
    const double ep = extents_[static_cast<std::size_t>(p)], eq = extents_[static_cast<std::size_t>(q)];
    return ep != eq ? ep < eq : p < q;
  });
  const double median = extents_[static_cast<std::size_t>(*mid)];
  const double limit = std::isfinite(median) ? std::max(4.0 * median, 1e-9) : 1e300;
  double cell = 0;
  Vec3 lo = Vec3::Constant(std::numeric_limits<double>::infinity()), hi = -lo;
  for (std::size_t i = 0; i < n; ++i) {
    if (extents_[i] > limit) {
      is_large_[i] = 1;
      large_.push_back(static_cast<std::int32_t>(i));
      continue;
    }
    cell = std::max(cell, extents_[i]);
    const Vec3 c = 0.5 * (boxes[i].min + boxes[i].max);
    lo = lo.cwiseMin(c);
    hi = hi.cwiseMax(c);
  }
  if (!(cell > 0)) cell = 1;
  const double inv = 1.0 / cell;
  // a dense grid over the occupied region when it is not much bigger than the body count,
  // hashed cells otherwise (bodies scattered far apart)
  std::int64_t dims[3] = {1, 1, 1};
  double cells_total = 1;
  if (large_.size() < n) {
    for (int k = 0; k < 3; ++k) {
      dims[k] = static_cast<std::int64_t>(std::floor((hi[k] - lo[k]) * inv)) + 1;
      cells_total *= static_cast<double>(dims[k]);
    }
  }
  const bool dense = cells_total <= 8.0 * static_cast<double>(n) + 64;
  std::uint32_t buckets = 16;
  if (dense) {
    buckets = static_cast<std::uint32_t>(cells_total);
  } else {
    while (buckets < 2 * n) buckets <<= 1;
  }
  const std::uint32_t mask = buckets - 1;
  grid_built_ = true;
  dense_ = dense;
  lo_ = lo;
  inv_cell_ = inv;
  for (int k = 0; k < 3; ++k) dims_[k] = dims[k];
  mask_ = mask;
  cells_.resize(n);
  bucket_of_.resize(n);
  bucket_start_.assign(static_cast<std::size_t>(buckets) + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (is_large_[i]) continue;
    const Vec3 c = (0.5 * (boxes[i].min + boxes[i].max) - lo) * inv;
    cells_[i] = {static_cast<std::int64_t>(std::floor(c.x())), static_cast<std::int64_t>(std::floor(c.y())),
                 static_cast<std::int64_t>(std::floor(c.z()))};
    if (dense) {
      for (int k = 0; k < 3; ++k) {
        std::int64_t& v = k == 0 ? cells_[i].x : k == 1 ? cells_[i].y : cells_[i].z;
        v = std::clamp<std::int64_t>(v, 0, dims[k] - 1);
      }
    }
    bucket_of_[i] = bucket_index(cells_[i]);
    ++bucket_start_[bucket_of_[i] + 1];
  }
  for (std::uint32_t b = 0; b < buckets; ++b) bucket_start_[b + 1] += bucket_start_[b];
  // bodies and their boxes sorted by bucket (ascending index inside one), for cache locality
  sorted_.resize(n);
  sorted_boxes_.resize(n);
  cursor_.assign(bucket_start_.begin(), bucket_start_.end() - 1);
  for (std::size_t i = 0; i < n; ++i) {
    if (is_large_[i]) continue;
    const std::uint32_t k = cursor_[bucket_of_[i]]++;
    sorted_[k] = static_cast<std::int32_t>(i);
    sorted_boxes_[k] = boxes[i];
  }
  return buckets;
}

// the overlapping pairs (unsorted): every ordinary box against the 27 cells around it, then
// the large boxes against everything
void BroadPhase::collect_grid_pairs(const std::vector<Aabb>& boxes, std::uint32_t buckets,
                                    std::vector<BoxPair>& pairs) {
  const std::size_t n = boxes.size();
  // walk the boxes in grid order (neighbours are then close in memory too); each pair is
  // taken from the box that comes first in that order, then all pairs are radix-sorted
  const std::uint32_t small = bucket_start_[buckets];
  for (std::uint32_t k = 0; k < small; ++k) {
    const std::int32_t i = sorted_[k];
    const Cell c = cells_[static_cast<std::size_t>(i)];
    const Aabb& bi = sorted_boxes_[k];
    auto scan = [&](std::uint32_t from, std::uint32_t to, const Cell* must_be) {
      for (std::uint32_t q = std::max(from, k + 1); q < to; ++q) {
        if (!bi.overlaps(sorted_boxes_[q])) continue;
        const std::int32_t j = sorted_[q];
        if (must_be && !(cells_[static_cast<std::size_t>(j)] == *must_be)) continue;
        pairs.push_back({std::min(i, j), std::max(i, j)});
      }
    };
    for (std::int64_t dz = -1; dz <= 1; ++dz) {
      for (std::int64_t dy = -1; dy <= 1; ++dy) {
        const std::int64_t y = c.y + dy, z = c.z + dz;
        if (dense_) {
          if (y < 0 || z < 0 || y >= dims_[1] || z >= dims_[2]) continue;
          // the three cells along x are adjacent buckets: one range
          const std::int64_t x0 = std::max<std::int64_t>(0, c.x - 1),
                             x1 = std::min<std::int64_t>(dims_[0] - 1, c.x + 1);
          scan(bucket_start_[bucket_index({x0, y, z})], bucket_start_[bucket_index({x1, y, z}) + 1], nullptr);
        } else {
          for (std::int64_t dx = -1; dx <= 1; ++dx) {
            const Cell nc{c.x + dx, y, z};
            const std::uint32_t b = bucket_index(nc);
            // a hashed bucket may hold several cells; one box per pair side is its own cell
            scan(bucket_start_[b], bucket_start_[b + 1], &nc);
          }
        }
      }
    }
  }
  for (std::int32_t l : large_) {
    for (std::size_t j = 0; j < n; ++j) {
      const auto jj = static_cast<std::int32_t>(j);
      if (jj == l || (is_large_[j] && jj < l)) continue;  // large-large pairs once
      if (boxes[static_cast<std::size_t>(l)].overlaps(boxes[j])) pairs.push_back({std::min(l, jj), std::max(l, jj)});
    }
  }
}

void BroadPhase::radix_sort_pairs(std::vector<BoxPair>& pairs, std::size_t n) {
  // least significant digit first, 11 bits at a time: b's digits, then a's
  int bits = 1;
  while ((std::size_t{1} << bits) < n) ++bits;
  const int digits = (bits + 10) / 11;
  radix_tmp_.resize(pairs.size());
  radix_count_.resize(2049);
  for (int pass = 0; pass < 2 * digits; ++pass) {
    const bool on_b = pass < digits;
    const int shift = 11 * (on_b ? pass : pass - digits);
    auto digit = [&](const BoxPair& p) { return (static_cast<std::uint32_t>(on_b ? p.b : p.a) >> shift) & 2047u; };
    std::fill(radix_count_.begin(), radix_count_.end(), 0u);
    for (const BoxPair& p : pairs) ++radix_count_[digit(p) + 1];
    for (std::size_t d = 0; d < 2048; ++d) radix_count_[d + 1] += radix_count_[d];
    for (const BoxPair& p : pairs) radix_tmp_[radix_count_[digit(p)]++] = p;
    pairs.swap(radix_tmp_);
  }
}

void BroadPhase::query(const std::vector<Aabb>& boxes, const Aabb& box, std::vector<std::int32_t>& out) const {
  out.clear();
  const std::size_t n = boxes.size();
  if (!grid_built_ || cells_.size() != n || !finite_box(box)) {
    for (std::size_t i = 0; i < n; ++i)
      if (box.overlaps(boxes[i])) out.push_back(static_cast<std::int32_t>(i));
    return;
  }
  // a box overlapping the query has its centre at most half a cell outside it
  std::int64_t from[3], to[3];
  double cells = 1;
  for (int k = 0; k < 3; ++k) {
    from[k] = static_cast<std::int64_t>(std::floor((box.min[k] - lo_[k]) * inv_cell_)) - 1;
    to[k] = static_cast<std::int64_t>(std::floor((box.max[k] - lo_[k]) * inv_cell_)) + 1;
    if (dense_) {
      from[k] = std::max<std::int64_t>(from[k], 0);
      to[k] = std::min<std::int64_t>(to[k], dims_[k] - 1);
      if (from[k] > to[k]) from[k] = 1, to[k] = 0;
    }
    cells *= static_cast<double>(std::max<std::int64_t>(0, to[k] - from[k] + 1));
  }
  if (cells > static_cast<double>(n)) {
    // a query wider than the crowd: scanning is cheaper
    for (std::size_t i = 0; i < n; ++i)
      if (box.overlaps(boxes[i])) out.push_back(static_cast<std::int32_t>(i));
    return;
  }
  for (std::int64_t z = from[2]; z <= to[2]; ++z)
    for (std::int64_t y = from[1]; y <= to[1]; ++y)
      for (std::int64_t x = from[0]; x <= to[0]; ++x) {
        const Cell c{x, y, z};
        const std::uint32_t b = bucket_index(c);
        for (std::uint32_t k = bucket_start_[b]; k < bucket_start_[b + 1]; ++k) {
          const std::int32_t j = sorted_[k];
          if (!dense_ && !(cells_[static_cast<std::size_t>(j)] == c)) continue;
          if (box.overlaps(sorted_boxes_[k])) out.push_back(j);
        }
      }
  for (std::int32_t l : large_)
    if (box.overlaps(boxes[static_cast<std::size_t>(l)])) out.push_back(l);
  std::sort(out.begin(), out.end());
}

}  // namespace tether::runtime
