// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/nmea.hpp"

#include <cmath>
#include <numbers>

namespace tether::hal {

namespace {

constexpr double deg = std::numbers::pi / 180.0;
// WGS-84
constexpr double wgs84_a_m = 6378137.0;
constexpr double wgs84_f = 1.0 / 298.257223563;
constexpr double wgs84_e2 = wgs84_f * (2.0 - wgs84_f);

// meridional (north) and prime-vertical (east) radii of curvature at a latitude
void radii(double lat_deg, double& m_north, double& n_east) {
  const double s = std::sin(lat_deg * deg);
  const double w = 1.0 - wgs84_e2 * s * s;
  n_east = wgs84_a_m / std::sqrt(w);
  m_north = wgs84_a_m * (1.0 - wgs84_e2) / (w * std::sqrt(w));
}

double wrap_lon(double lon) {
  while (lon > 180.0) lon -= 360.0;
  while (lon <= -180.0) lon += 360.0;
  return lon;
}

// bounded text output: every write checks the capacity, the first overflow sticks
struct Writer {
  char* out;
  std::size_t capacity;
  std::size_t n = 0;
  bool ok = true;

  void put(char c) {
    if (n < capacity)
      out[n++] = c;
    else
      ok = false;
  }
  void text(std::string_view s) {
    for (char c : s) put(c);
  }
  // a non-negative integer with at least `width` digits (leading zeros)
  void digits(std::uint64_t v, int width) {
    char buf[24];
    int len = 0;
    do {
      buf[len++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    for (int i = len; i < width; ++i) put('0');
    while (len > 0) put(buf[--len]);
  }
  // a signed number with one decimal, rounded half away from zero
  void one_decimal(double v) {
    const std::int64_t tenths = std::llround(std::abs(v) * 10.0);
    if (v < 0 && tenths != 0) put('-');
    digits(static_cast<std::uint64_t>(tenths / 10), 1);
    put('.');
    digits(static_cast<std::uint64_t>(tenths % 10), 1);
  }
  // hhmmss.cc of the UTC day
  void time_of_day(std::int64_t utc_cs) {
    std::int64_t day_cs = utc_cs % 8'640'000;
    if (day_cs < 0) day_cs += 8'640'000;
    digits(static_cast<std::uint64_t>(day_cs / 360'000), 2);
    digits(static_cast<std::uint64_t>(day_cs / 6'000 % 60), 2);
    digits(static_cast<std::uint64_t>(day_cs / 100 % 60), 2);
    put('.');
    digits(static_cast<std::uint64_t>(day_cs % 100), 2);
  }
  // ddmm.mmmmm,N (or dddmm.mmmmm,E for longitude)
  void angle(double value_deg, int degree_digits, char positive, char negative) {
    const std::int64_t total = std::llround(std::abs(value_deg) * 60.0 * 1e5);  // 1e-5 minutes
    digits(static_cast<std::uint64_t>(total / 6'000'000), degree_digits);
    const std::int64_t rem = total % 6'000'000;
    digits(static_cast<std::uint64_t>(rem / 100'000), 2);
    put('.');
    digits(static_cast<std::uint64_t>(rem % 100'000), 5);
    put(',');
    put(value_deg < 0 && total != 0 ? negative : positive);
  }
  // "*HH" over what has been written since the '$'
  std::size_t finish() {
    std::uint8_t sum = 0;
    for (std::size_t i = 1; i < n && i < capacity; ++i)
      sum = static_cast<std::uint8_t>(sum ^ static_cast<std::uint8_t>(out[i]));
    const char* hex = "0123456789ABCDEF";
    put('*');
    put(hex[sum >> 4]);
    put(hex[sum & 0x0F]);
    return ok && n <= nmea_max_length ? n : 0;
  }
};

}  // namespace

GeoPoint local_to_geodetic(double datum_lat_deg, double datum_lon_deg, double datum_alt_m, double east_m,
                           double north_m, double up_m) {
  double m = 0, n = 0;
  radii(datum_lat_deg, m, n);
  GeoPoint p;
  p.lat_deg = datum_lat_deg + north_m / m / deg;
  p.lon_deg = wrap_lon(datum_lon_deg + east_m / (n * std::cos(datum_lat_deg * deg)) / deg);
  p.alt_m = datum_alt_m + up_m;
  return p;
}

void geodetic_to_local(double datum_lat_deg, double datum_lon_deg, double datum_alt_m, const GeoPoint& point,
                       double& east_m, double& north_m, double& up_m) {
  double m = 0, n = 0;
  radii(datum_lat_deg, m, n);
  north_m = (point.lat_deg - datum_lat_deg) * deg * m;
  east_m = wrap_lon(point.lon_deg - datum_lon_deg) * deg * n * std::cos(datum_lat_deg * deg);
  up_m = point.alt_m - datum_alt_m;
}

// days <-> civil date on the proleptic Gregorian calendar, counted in 400-year eras of
// 146097 days with years starting on 1 March (so the leap day is the last day of a year)
std::int64_t days_from_civil(int year, int month, int day) {
  const std::int64_t y = static_cast<std::int64_t>(year) - (month <= 2 ? 1 : 0);
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;                          // [0, 399]
  const std::int64_t mp = (month + 9) % 12;                        // March = 0
  const std::int64_t doy = (153 * mp + 2) / 5 + day - 1;           // [0, 365]
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;  // [0, 146096]
  return era * 146097 + doe - 719468;                              // 719468 days from 0000-03-01 to 1970-01-01
}

CivilDate civil_from_days(std::int64_t days) {
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  CivilDate d;
  d.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  d.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  d.year = static_cast<int>(yoe + era * 400 + (d.month <= 2 ? 1 : 0));
  return d;
}

std::uint8_t nmea_checksum(std::string_view sentence) {
  std::uint8_t sum = 0;
  std::size_t i = sentence.empty() || sentence[0] != '$' ? 0 : 1;
  for (; i < sentence.size() && sentence[i] != '*'; ++i)
    sum = static_cast<std::uint8_t>(sum ^ static_cast<std::uint8_t>(sentence[i]));
  return sum;
}

bool nmea_checksum_ok(std::string_view sentence) {
  const std::size_t star = sentence.find('*');
  if (sentence.empty() || sentence[0] != '$' || star == std::string_view::npos || star + 3 != sentence.size())
    return false;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = hex(sentence[star + 1]), lo = hex(sentence[star + 2]);
  return hi >= 0 && lo >= 0 && nmea_checksum(sentence) == static_cast<std::uint8_t>(hi * 16 + lo);
}

std::size_t format_gga(char* out, std::size_t capacity, std::int64_t utc_cs, const GeoPoint& p, unsigned satellites,
                       double hdop) {
  Writer w{out, capacity};
  w.text("$GPGGA,");
  w.time_of_day(utc_cs);
  w.put(',');
  w.angle(p.lat_deg, 2, 'N', 'S');
  w.put(',');
  w.angle(p.lon_deg, 3, 'E', 'W');
  w.text(",1,");
  w.digits(satellites, 2);
  w.put(',');
  w.one_decimal(hdop);
  w.put(',');
  w.one_decimal(p.alt_m);
  w.text(",M,0.0,M,,");
  return w.finish();
}

std::size_t format_rmc(char* out, std::size_t capacity, std::int64_t utc_cs, const GeoPoint& p, double speed_m_s,
                       double course_deg) {
  Writer w{out, capacity};
  w.text("$GPRMC,");
  w.time_of_day(utc_cs);
  w.text(",A,");
  w.angle(p.lat_deg, 2, 'N', 'S');
  w.put(',');
  w.angle(p.lon_deg, 3, 'E', 'W');
  w.put(',');
  w.one_decimal(std::abs(speed_m_s) * 3600.0 / 1852.0);  // knots
  w.put(',');
  double course = std::fmod(course_deg, 360.0);
  if (course < 0) course += 360.0;
  if (std::llround(course * 10.0) >= 3600) course = 0;  // 359.96 would print as 360.0
  w.one_decimal(course);
  w.put(',');
  std::int64_t days = utc_cs / 8'640'000;
  if (utc_cs % 8'640'000 < 0) --days;
  const CivilDate d = civil_from_days(days);
  w.digits(static_cast<std::uint64_t>(d.day), 2);
  w.digits(static_cast<std::uint64_t>(d.month), 2);
  w.digits(static_cast<std::uint64_t>(((d.year % 100) + 100) % 100), 2);
  w.text(",,,A");
  return w.finish();
}

}  // namespace tether::hal
