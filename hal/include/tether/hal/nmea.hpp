// SPDX-License-Identifier: Apache-2.0
// GPS helpers: local metres to latitude/longitude around a datum, and NMEA 0183 sentences
// ($GPGGA, $GPRMC) written into caller-owned buffers (no heap, no locale, no printf).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tether::hal {

/// Latitude and longitude in degrees (north and east positive), altitude in metres.
struct GeoPoint {
  double lat_deg = 0;
  double lon_deg = 0;
  double alt_m = 0;
};

/// A calendar date (proleptic Gregorian).
struct CivilDate {
  int year = 1970;
  int month = 1;  // 1..12
  int day = 1;    // 1..31
};

/// Local east/north/up metres around a datum to geodetic coordinates, on the WGS-84
/// ellipsoid's tangent plane at the datum (radii of curvature at the datum latitude; good
/// to a few millimetres over a test tank, centimetres over a few kilometres).
GeoPoint local_to_geodetic(double datum_lat_deg, double datum_lon_deg, double datum_alt_m, double east_m,
                           double north_m, double up_m);
/// The inverse of local_to_geodetic.
void geodetic_to_local(double datum_lat_deg, double datum_lon_deg, double datum_alt_m, const GeoPoint& point,
                       double& east_m, double& north_m, double& up_m);

/// The date of a day count since 1970-01-01.
CivilDate civil_from_days(std::int64_t days);
/// Days since 1970-01-01 of a date; the inverse of civil_from_days.
std::int64_t days_from_civil(int year, int month, int day);

/// XOR of the characters between '$' and '*' (or the end), the NMEA checksum.
std::uint8_t nmea_checksum(std::string_view sentence);
/// True if the sentence is "$...*HH" with HH the right checksum in upper-case hex.
bool nmea_checksum_ok(std::string_view sentence);

/// Longest sentence written here, without CR LF (NMEA allows 80 + CR LF).
inline constexpr std::size_t nmea_max_length = 80;

/// Writes a $GPGGA sentence (fix quality 1) from '$' to the checksum, no CR LF; returns its
/// length, or 0 if `capacity` is too small. `utc_cs` is UTC in centiseconds since 1970.
std::size_t format_gga(char* out, std::size_t capacity, std::int64_t utc_cs, const GeoPoint& p, unsigned satellites,
                       double hdop);
/// Writes a $GPRMC sentence (status A) with speed over ground and course; same conventions.
std::size_t format_rmc(char* out, std::size_t capacity, std::int64_t utc_cs, const GeoPoint& p, double speed_m_s,
                       double course_deg);

}  // namespace tether::hal
