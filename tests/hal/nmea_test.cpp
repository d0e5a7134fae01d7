// SPDX-License-Identifier: Apache-2.0
#include "tether/hal/nmea.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <doctest/doctest.h>

using namespace tether::hal;

namespace {

std::vector<std::string> fields(const std::string& sentence) {
  std::vector<std::string> out;
  const std::string body = sentence.substr(0, sentence.find('*'));
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = body.find(',', start);
    out.push_back(body.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// ddmm.mmmmm (or dddmm.mmmmm) and a hemisphere back to signed degrees
double nmea_angle(const std::string& value, const std::string& hemisphere, int degree_digits) {
  const double d = std::stod(value.substr(0, static_cast<std::size_t>(degree_digits)));
  const double m = std::stod(value.substr(static_cast<std::size_t>(degree_digits)));
  const double v = d + m / 60.0;
  return hemisphere == "S" || hemisphere == "W" ? -v : v;
}

}  // namespace

TEST_CASE("nmea checksum: the textbook GGA example") {
  const std::string s = "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47";
  CHECK(nmea_checksum(s) == 0x47);
  CHECK(nmea_checksum_ok(s));
  CHECK_FALSE(nmea_checksum_ok("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*48"));
  CHECK_FALSE(nmea_checksum_ok("GPGGA*47"));
  CHECK_FALSE(nmea_checksum_ok("$GPGGA"));
  CHECK_FALSE(nmea_checksum_ok("$GPGGA*4"));
}

TEST_CASE("format_gga: fields, rounding and checksum") {
  char buf[100];
  const GeoPoint p{48.1173, 11.516666666667, 545.4};
  const std::int64_t utc = days_from_civil(2024, 6, 1) * 8'640'000 + (12 * 3600 + 35 * 60 + 19) * 100 + 25;
  const std::size_t n = format_gga(buf, sizeof buf, utc, p, 8, 0.9);
  REQUIRE(n > 0);
  const std::string s(buf, n);
  CHECK(s == "$GPGGA,123519.25,4807.03800,N,01131.00000,E,1,08,0.9,545.4,M,0.0,M,,*" + s.substr(s.size() - 2));
  CHECK(nmea_checksum_ok(s));
  CHECK(s.size() <= nmea_max_length);
  const auto f = fields(s);
  REQUIRE(f.size() == 15);
  CHECK(nmea_angle(f[2], f[3], 2) == doctest::Approx(48.1173).epsilon(1e-9));
  CHECK(nmea_angle(f[4], f[5], 3) == doctest::Approx(11.516666666667).epsilon(1e-9));

  SUBCASE("southern and western hemispheres, negative altitude") {
    const std::size_t m = format_gga(buf, sizeof buf, 0, GeoPoint{-33.8688, -151.2093, -2.25}, 12, 1.25);
    const auto g = fields(std::string(buf, m));
    CHECK(g[1] == "000000.00");
    CHECK(g[3] == "S");
    CHECK(g[5] == "W");
    CHECK(nmea_angle(g[2], g[3], 2) == doctest::Approx(-33.8688).epsilon(1e-9));
    CHECK(nmea_angle(g[4], g[5], 3) == doctest::Approx(-151.2093).epsilon(1e-9));
    CHECK(g[7] == "12");
    CHECK(g[8] == "1.3");
    CHECK(g[9] == "-2.3");
    CHECK(nmea_checksum_ok(std::string(buf, m)));
  }
  SUBCASE("a buffer too small gives 0") { CHECK(format_gga(buf, 20, utc, p, 8, 0.9) == 0); }
}

TEST_CASE("format_rmc: speed in knots, course and date") {
  char buf[100];
  const std::int64_t utc = days_from_civil(2023, 12, 31) * 8'640'000 + 23 * 360'000 + 59 * 6'000 + 5'999;
  const std::size_t n = format_rmc(buf, sizeof buf, utc, GeoPoint{1.5, 2.25, 0}, 1852.0 / 3600.0 * 5.0, -90.0);
  REQUIRE(n > 0);
  const std::string s(buf, n);
  CHECK(nmea_checksum_ok(s));
  const auto f = fields(s);
  REQUIRE(f.size() == 13);
  CHECK(f[0] == "$GPRMC");
  CHECK(f[1] == "235959.99");
  CHECK(f[2] == "A");
  CHECK(f[7] == "5.0");
  CHECK(f[8] == "270.0");
  CHECK(f[9] == "311223");
  CHECK(f[12] == "A");
}

TEST_CASE("civil dates: known days and a round trip over 400 years") {
  CHECK(days_from_civil(1970, 1, 1) == 0);
  CHECK(days_from_civil(2000, 3, 1) == 11017);
  CHECK(days_from_civil(2024, 1, 1) * 86400 == 1'704'067'200);
  const CivilDate leap = civil_from_days(days_from_civil(2024, 2, 29));
  CHECK(leap.year == 2024);
  CHECK(leap.month == 2);
  CHECK(leap.day == 29);
  for (std::int64_t d = -1000; d < 146097; d += 7) {
    const CivilDate c = civil_from_days(d);
    REQUIRE(days_from_civil(c.year, c.month, c.day) == d);
  }
}

TEST_CASE("local_to_geodetic: metres to degrees on the WGS-84 tangent plane") {
  // at the equator a degree of latitude is 110574 m, of longitude 111320 m
  const GeoPoint n = local_to_geodetic(0, 0, 0, 0, 110574.3, 0);
  CHECK(n.lat_deg == doctest::Approx(1.0).epsilon(1e-5));
  const GeoPoint e = local_to_geodetic(0, 0, 0, 111319.5, 0, 0);
  CHECK(e.lon_deg == doctest::Approx(1.0).epsilon(1e-5));
  // at 60 degrees a degree of longitude is about half as long
  const GeoPoint e60 = local_to_geodetic(60, 10, 5, 55800, 0, 2);
  CHECK(e60.lon_deg - 10 == doctest::Approx(1.0).epsilon(2e-3));
  CHECK(e60.alt_m == 7.0);
  double x = 0, y = 0, z = 0;
  geodetic_to_local(60, 10, 5, local_to_geodetic(60, 10, 5, 12.5, -7.25, -1), x, y, z);
  CHECK(x == doctest::Approx(12.5));
  CHECK(y == doctest::Approx(-7.25));
  CHECK(z == doctest::Approx(-1));
  CHECK(local_to_geodetic(0, 179.9999, 0, 50, 0, 0).lon_deg < -179.0);  // wraps the date line
}
