// SPDX-License-Identifier: Apache-2.0
#include "tether/physics/terrain.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <sstream>
#include <stdexcept>

namespace tether::runtime {

void finish_heightfield(HeightField& f) {
  if (f.columns < 2 || f.rows < 2)
    throw std::invalid_argument("heightfield needs at least 2x2 vertices, got " + std::to_string(f.columns) + "x" +
                                std::to_string(f.rows));
  if (!(f.cell_size_m > 0) || !std::isfinite(f.cell_size_m))
    throw std::invalid_argument("heightfield cell size must be a number > 0");
  const std::size_t want = static_cast<std::size_t>(f.columns) * static_cast<std::size_t>(f.rows);
  if (f.heights_m.size() != want)
    throw std::invalid_argument("heightfield has " + std::to_string(f.heights_m.size()) + " heights, expected " +
                                std::to_string(want));
  f.min_height_m = std::numeric_limits<double>::infinity();
  f.max_height_m = -std::numeric_limits<double>::infinity();
  for (double h : f.heights_m) {
    if (!std::isfinite(h)) throw std::invalid_argument("heightfield has a height that is not finite");
    f.min_height_m = std::min(f.min_height_m, h);
    f.max_height_m = std::max(f.max_height_m, h);
  }
}

HeightField make_heightfield(const std::vector<std::vector<double>>& rows, double cell_size_m, double height_scale_m,
                             std::string name) {
  HeightField f;
  f.name = std::move(name);
  f.rows = static_cast<int>(rows.size());
  f.columns = rows.empty() ? 0 : static_cast<int>(rows.front().size());
  f.cell_size_m = cell_size_m;
  for (std::size_t j = 0; j < rows.size(); ++j) {
    if (rows[j].size() != static_cast<std::size_t>(f.columns))
      throw std::invalid_argument("heightfield row " + std::to_string(j) + " has " + std::to_string(rows[j].size()) +
                                  " heights, row 0 has " + std::to_string(f.columns));
    for (double h : rows[j]) f.heights_m.push_back(h * height_scale_m);
  }
  finish_heightfield(f);
  return f;
}

HeightField heightfield_from_pgm(std::string_view bytes, double cell_size_m, double height_scale_m, double base_m,
                                 std::string name) {
  std::size_t pos = 0;
  auto fail = [](const std::string& why) -> HeightField { throw std::invalid_argument("PGM: " + why); };
  // header tokens: magic, width, height, maxval; '#' comments run to the end of a line
  auto token = [&]() -> std::string {
    for (;;) {
      while (pos < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[pos]))) ++pos;
      if (pos < bytes.size() && bytes[pos] == '#') {
        while (pos < bytes.size() && bytes[pos] != '\n') ++pos;
        continue;
      }
      break;
    }
    const std::size_t start = pos;
    while (pos < bytes.size() && !std::isspace(static_cast<unsigned char>(bytes[pos])) && bytes[pos] != '#') ++pos;
    return std::string(bytes.substr(start, pos - start));
  };
  auto number = [&](const char* what) -> long {
    const std::string t = token();
    if (t.empty() ||
        !std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      throw std::invalid_argument(std::string("PGM: expected ") + what + ", got \"" + t + "\"");
    return std::stol(t);
  };
  const std::string magic = token();
  if (magic != "P2" && magic != "P5")
    return fail("expected P2 or P5 (PNG is not supported), got \"" + magic.substr(0, 8) + "\"");
  const long w = number("a width"), h = number("a height"), maxval = number("a maximum value");
  if (w < 2 || h < 2) return fail("image must be at least 2x2 pixels");
  if (w > 1 << 16 || h > 1 << 16) return fail("image larger than 65536 pixels on a side");
  // a small file must not make us allocate gigabytes before its pixels turn out missing
  if (w * h > 1L << 24) return fail("image larger than 16,777,216 pixels (4096 x 4096)");
  if (maxval < 1 || maxval > 65535) return fail("maximum value must be 1..65535");
  HeightField f;
  f.name = std::move(name);
  f.columns = static_cast<int>(w);
  f.rows = static_cast<int>(h);
  f.cell_size_m = cell_size_m;
  f.heights_m.assign(static_cast<std::size_t>(w) * static_cast<std::size_t>(h), 0.0);
  const double scale = height_scale_m / static_cast<double>(maxval);
  auto put = [&](long x, long y, long v) {
    if (v > maxval) throw std::invalid_argument("PGM: pixel value above the maximum value");
    // image row 0 is the top: the grid's last row
    const std::size_t row = static_cast<std::size_t>(h - 1 - y);
    f.heights_m[row * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)] =
        base_m + static_cast<double>(v) * scale;
  };
  if (magic == "P2") {
    for (long y = 0; y < h; ++y)
      for (long x = 0; x < w; ++x) put(x, y, number("a pixel value"));
  } else {
    ++pos;  // exactly one whitespace byte after maxval
    const std::size_t bpp = maxval < 256 ? 1 : 2;
    if (bytes.size() < pos + static_cast<std::size_t>(w * h) * bpp)
      return fail("pixel data shorter than width x height");
    for (long y = 0; y < h; ++y) {
      for (long x = 0; x < w; ++x) {
        const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + pos);
        const long v = bpp == 1 ? p[0] : (p[0] << 8) | p[1];
        pos += bpp;
        put(x, y, v);
      }
    }
  }
  finish_heightfield(f);
  return f;
}

HeightField load_pgm_heightfield(const std::string& path, double cell_size_m, double height_scale_m, double base_m) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot open the file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return heightfield_from_pgm(buffer.str(), cell_size_m, height_scale_m, base_m,
                                std::filesystem::path(path).stem().string());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

namespace {

// the triangle of cell (i, j) holding local (fx, fy) in [0,1]^2: corners, plane
struct Tri {
  std::array<Vec3, 3> v;
};

// both triangles of a cell in grid coordinates
void cell_triangles(const HeightField& f, int i, int j, Tri& lower, Tri& upper) {
  const double c = f.cell_size_m;
  const double x0 = i * c, y0 = j * c;
  const Vec3 p00(x0, y0, f.height(i, j)), p10(x0 + c, y0, f.height(i + 1, j));
  const Vec3 p01(x0, y0 + c, f.height(i, j + 1)), p11(x0 + c, y0 + c, f.height(i + 1, j + 1));
  lower.v = {p00, p10, p11};  // fx >= fy
  upper.v = {p00, p11, p01};  // fy > fx
}

Vec3 closest_point_triangle(const Vec3& p, const Vec3& a, const Vec3& b, const Vec3& c) {
  const Vec3 ab = b - a, ac = c - a, ap = p - a;
  const double d1 = ab.dot(ap), d2 = ac.dot(ap);
  if (d1 <= 0 && d2 <= 0) return a;
  const Vec3 bp = p - b;
  const double d3 = ab.dot(bp), d4 = ac.dot(bp);
  if (d3 >= 0 && d4 <= d3) return b;
  const double vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) return a + ab * (d1 / (d1 - d3));
  const Vec3 cp = p - c;
  const double d5 = ab.dot(cp), d6 = ac.dot(cp);
  if (d6 >= 0 && d5 <= d6) return c;
  const double vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) return a + ac * (d2 / (d2 - d6));
  const double va = d3 * d6 - d5 * d4;
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
  const double denom = 1.0 / (va + vb + vc);
  return a + ab * (vb * denom) + ac * (vc * denom);
}

// cells touched by a grid-frame xy range, clamped to the grid; false if none
bool cell_range(const HeightField& f, double x0, double x1, double y0, double y1, int& i0, int& i1, int& j0, int& j1) {
  const double inv = 1.0 / f.cell_size_m;
  const double fx0 = std::floor(x0 * inv), fx1 = std::floor(x1 * inv);
  const double fy0 = std::floor(y0 * inv), fy1 = std::floor(y1 * inv);
  if (fx1 < 0 || fy1 < 0 || fx0 > f.columns - 2 || fy0 > f.rows - 2) return false;
  i0 = static_cast<int>(std::max(0.0, fx0));
  i1 = static_cast<int>(std::min<double>(f.columns - 2, fx1));
  j0 = static_cast<int>(std::max(0.0, fy0));
  j1 = static_cast<int>(std::min<double>(f.rows - 2, fy1));
  return i0 <= i1 && j0 <= j1;
}

// collects grid-frame contacts, keeps the best
struct TerrainContacts {
  std::array<ContactPoint, 32> p;
  int n = 0;
  double merge_m = 1e-4;
  void add(const Vec3& point, const Vec3& normal, double sep) {
    for (int i = 0; i < n; ++i) {
      auto& q = p[static_cast<std::size_t>(i)];
      if ((q.point - point).squaredNorm() < merge_m * merge_m) {
        if (sep < q.separation_m) q = {point, normal, sep};
        return;
      }
    }
    if (n < static_cast<int>(p.size())) {
      p[static_cast<std::size_t>(n++)] = {point, normal, sep};
      return;
    }
    int worst = 0;
    for (int i = 1; i < n; ++i)
      if (p[static_cast<std::size_t>(i)].separation_m > p[static_cast<std::size_t>(worst)].separation_m) worst = i;
    if (sep < p[static_cast<std::size_t>(worst)].separation_m)
      p[static_cast<std::size_t>(worst)] = {point, normal, sep};
  }
};

void sphere_terrain(const HeightField& f, const Vec3& c, double r, double margin, TerrainContacts& out) {
  int i0, i1, j0, j1;
  const double reach = r + margin;
  if (c.z() - reach > f.max_height_m) return;
  if (!cell_range(f, c.x() - reach, c.x() + reach, c.y() - reach, c.y() + reach, i0, i1, j0, j1)) return;
  for (int j = j0; j <= j1; ++j) {
    for (int i = i0; i <= i1; ++i) {
      Tri tris[2];
      cell_triangles(f, i, j, tris[0], tris[1]);
      for (const Tri& t : tris) {
        const Vec3 q = closest_point_triangle(c, t.v[0], t.v[1], t.v[2]);
        Vec3 tn = (t.v[1] - t.v[0]).cross(t.v[2] - t.v[0]).normalized();
        if (tn.z() < 0) tn = -tn;
        const double above = (c - t.v[0]).dot(tn);  // height over the triangle's plane
        double sep;
        Vec3 n;
        if (above < 0) {
          // centre below the surface: only the triangle right under it answers, along its normal
          if ((c - above * tn - q).norm() > 1e-7 * f.cell_size_m) continue;
          sep = above - r;
          n = tn;
        } else {
          const Vec3 d = c - q;
          const double len = d.norm();
          sep = len - r;
          n = len > 1e-12 ? Vec3(d / len) : tn;
        }
        if (sep < margin) out.add(0.5 * ((c - r * n) + q), n, sep);
      }
    }
  }
}

// a point of a shape's surface against the surface below/above it
void point_terrain(const HeightField& f, const Vec3& p, double margin, TerrainContacts& out) {
  double z;
  Vec3 n;
  if (!heightfield_height(f, p.x(), p.y(), z, &n)) return;
  const double sep = (p.z() - z) * n.z();  // distance to the triangle's plane
  if (sep < margin) out.add(p - n * (0.5 * sep), n, sep);
}

}  // namespace

bool heightfield_height(const HeightField& f, double x, double y, double& z, Vec3* normal) {
  if (f.columns < 2 || f.rows < 2) return false;
  const double gx = x / f.cell_size_m, gy = y / f.cell_size_m;
  if (!(gx >= 0 && gy >= 0 && gx <= f.columns - 1 && gy <= f.rows - 1)) return false;
  const int i = std::min(static_cast<int>(gx), f.columns - 2);
  const int j = std::min(static_cast<int>(gy), f.rows - 2);
  const double fx = gx - i, fy = gy - j;
  const double h00 = f.height(i, j), h10 = f.height(i + 1, j), h01 = f.height(i, j + 1), h11 = f.height(i + 1, j + 1);
  double sx, sy;  // slopes dz/dx, dz/dy in grid units
  if (fx >= fy) {
    sx = h10 - h00;
    sy = h11 - h10;
  } else {
    sx = h11 - h01;
    sy = h01 - h00;
  }
  z = h00 + fx * sx + fy * sy;
  if (normal) *normal = Vec3(-sx / f.cell_size_m, -sy / f.cell_size_m, 1.0).normalized();
  return true;
}

bool terrain_height(const WorldModel& model, int static_index, double x, double y, double& z, Vec3* normal_world) {
  if (static_index < 0 || static_cast<std::size_t>(static_index) >= model.statics.size()) return false;
  const StaticBody& s = model.statics[static_cast<std::size_t>(static_index)];
  if (s.shape.kind != ShapeKind::heightfield || s.shape.heightfield < 0 ||
      static_cast<std::size_t>(s.shape.heightfield) >= model.heightfields.size())
    return false;
  const Mat3 r = s.orientation.toRotationMatrix();
  const Vec3 local = r.transpose() * (Vec3(x, y, s.position_m.z()) - s.position_m);
  Vec3 n;
  if (!heightfield_height(model.heightfields[static_cast<std::size_t>(s.shape.heightfield)], local.x(), local.y(), z,
                          &n))
    return false;
  z += s.position_m.z();
  if (normal_world) *normal_world = r * n;
  return true;
}

Aabb heightfield_aabb(const HeightField& f, const Vec3& position, const Mat3& rotation) {
  const Vec3 lo(0, 0, f.min_height_m);
  const Vec3 hi((f.columns - 1) * f.cell_size_m, (f.rows - 1) * f.cell_size_m, f.max_height_m);
  const Vec3 c = 0.5 * (lo + hi), e = 0.5 * (hi - lo);
  const Vec3 wc = position + rotation * c;
  const Vec3 we = rotation.cwiseAbs() * e;
  return {wc - we, wc + we};
}

int collide_heightfield(const ShapePose& shape, const HeightField& f, const Vec3& position, const Mat3& rotation,
                        double margin, ContactPoint* out) {
  // everything happens in the grid frame
  const Mat3 rt = rotation.transpose();
  ShapePose local{shape.shape, rt * (shape.position - position), rt * shape.rotation};
  const Shape& s = *shape.shape;
  TerrainContacts tc;
  tc.merge_m = std::max(1e-6, 0.05 * std::min(shape_size(s), f.cell_size_m));
  Aabb box = shape_aabb(local);
  box.inflate(margin);
  if (box.min.z() > f.max_height_m) return 0;
  switch (s.kind) {
    case ShapeKind::sphere: sphere_terrain(f, local.position, s.radius_m, margin, tc); break;
    case ShapeKind::capsule: {
      // spheres along the segment, no farther apart than half a radius or a cell
      const Vec3 u = local.rotation.col(0);
      const double spacing = std::max(1e-6, std::min(0.5 * s.radius_m, f.cell_size_m));
      const int count = std::clamp(static_cast<int>(std::ceil(2 * s.half_length_m / spacing)), 1, 32);
      for (int k = 0; k <= count; ++k) {
        const double t = -s.half_length_m + 2 * s.half_length_m * k / count;
        sphere_terrain(f, local.position + u * t, s.radius_m, margin, tc);
      }
      break;
    }
    case ShapeKind::box:
    case ShapeKind::cylinder: {
      if (s.kind == ShapeKind::box) {
        const Vec3& e = s.half_extents_m;
        for (int i = 0; i < 8; ++i) {
          const Vec3 c((i & 1) ? e.x() : -e.x(), (i & 2) ? e.y() : -e.y(), (i & 4) ? e.z() : -e.z());
          point_terrain(f, local.position + local.rotation * c, margin, tc);
        }
      } else {
        const Vec3 u = local.rotation.col(0);
        const Vec3 v = local.rotation.col(1), w = local.rotation.col(2);
        for (double end : {-1.0, 1.0}) {
          const Vec3 ce = local.position + u * (end * s.half_length_m);
          for (int k = 0; k < 8; ++k) {
            const double a = k * std::numbers::pi / 4;
            point_terrain(f, ce + s.radius_m * (std::cos(a) * v + std::sin(a) * w), margin, tc);
          }
        }
      }
      // grid vertices under the shape that poke into it (terrain peaks against faces)
      int i0, i1, j0, j1;
      if (cell_range(f, box.min.x(), box.max.x(), box.min.y(), box.max.y(), i0, i1, j0, j1)) {
        for (int j = j0; j <= j1 + 1; ++j) {
          for (int i = i0; i <= i1 + 1; ++i) {
            const Vec3 gv(i * f.cell_size_m, j * f.cell_size_m, f.height(i, j));
            if (gv.x() < box.min.x() || gv.x() > box.max.x() || gv.y() < box.min.y() || gv.y() > box.max.y() ||
                gv.z() < box.min.z() || gv.z() > box.max.z())
              continue;
            Vec3 n, q;
            const double d = point_distance(local, gv, n, q);
            if (d < margin) tc.add(0.5 * (gv + q), -n, d);
          }
        }
      }
      break;
    }
    case ShapeKind::plane:
    case ShapeKind::heightfield: break;
  }
  // keep the deepest points, back in world terms
  std::sort(tc.p.begin(), tc.p.begin() + tc.n,
            [](const ContactPoint& a, const ContactPoint& b) { return a.separation_m < b.separation_m; });
  const int n = std::min(tc.n, max_contact_points);
  for (int i = 0; i < n; ++i) {
    const ContactPoint& c = tc.p[static_cast<std::size_t>(i)];
    out[i] = {position + rotation * c.point, rotation * c.normal, c.separation_m};
  }
  return n;
}

}  // namespace tether::runtime
