// SPDX-License-Identifier: Apache-2.0
// An ROV's depth and heading hold on an Arduino Uno, written the way an Arduino user writes
// one: nothing in it knows about Tether (examples/arduino/README.md).
//
//   MS5837-30BA pressure sensor on I2C (0x76): depth
//   MPU-6050 IMU on I2C (0x68): yaw rate, integrated into a heading
//   two ESCs on pins 9 and 10 (Timer 1, 50 Hz, 1100-1900 us): the horizontal thrusters
//   an H-bridge on pins 5 and 6 (PWM) with direction pins 7 and 8: the vertical thrusters
//
// It dives to TARGET_DEPTH_M, cruises ahead and holds the heading it started with, and prints
// its state once a second on Serial.
#include <Wire.h>

const float TARGET_DEPTH_M = 2.0;
const float CRUISE = 0.3;        // forward thrust, -1..1
const float FLUID_DENSITY = 1025; // sea water, kg/m^3
const float DEPTH_KP = 0.9, DEPTH_KI = 0.15, DEPTH_KD = 1.6;
const float HEADING_KP = 0.03, HEADING_KD = 0.03;  // per degree, per degree/s

const byte MS5837_ADDR = 0x76;
const byte MPU_ADDR = 0x68;

uint16_t prom[8];
float surface_pa = 101325;
float depth_m = 0, depth_rate = 0, depth_integral = 0;
float heading_deg = 0;  // counter-clockwise from where it started
float yaw_rate_dps = 0;
unsigned long last_us = 0, last_print_ms = 0;
bool sensor_ok = false;
bool sensor_lost = false;

// ---- MS5837 (datasheet: reset, PROM, D1/D2 conversions, ADC read) ----
void ms5837_command(byte cmd) {
  Wire.beginTransmission(MS5837_ADDR);
  Wire.write(cmd);
  Wire.endTransmission();
}

uint32_t ms5837_adc() {  // 0: no answer (or a conversion not done)
  ms5837_command(0x00);
  if (Wire.requestFrom(MS5837_ADDR, (byte)3) != 3) return 0;
  uint32_t v = Wire.read();
  v = (v << 8) | Wire.read();
  v = (v << 8) | Wire.read();
  return v;
}

byte crc4(uint16_t n_prom[]) {
  uint16_t n_rem = 0;
  n_prom[0] = n_prom[0] & 0x0FFF;
  n_prom[7] = 0;
  for (byte i = 0; i < 16; i++) {
    if (i % 2 == 1) n_rem ^= (n_prom[i >> 1] & 0x00FF);
    else n_rem ^= (n_prom[i >> 1] >> 8);
    for (byte bit = 8; bit > 0; bit--) {
      if (n_rem & 0x8000) n_rem = (n_rem << 1) ^ 0x3000;
      else n_rem = (n_rem << 1);
    }
  }
  return (n_rem >> 12) & 0x000F;
}

bool ms5837_init() {
  ms5837_command(0x1E);
  delay(10);
  for (byte i = 0; i < 7; i++) {
    ms5837_command(0xA0 + i * 2);
    Wire.requestFrom(MS5837_ADDR, (byte)2);
    prom[i] = (Wire.read() << 8) | Wire.read();
  }
  uint16_t copy[8];
  for (byte i = 0; i < 8; i++) copy[i] = prom[i];
  byte crc_read = prom[0] >> 12;
  return crc4(copy) == crc_read;
}

float ms5837_pressure_pa() {
  ms5837_command(0x44);  // D1, OSR 1024: 2.28 ms at most
  delay(3);
  uint32_t d1 = ms5837_adc();
  ms5837_command(0x54);  // D2, OSR 1024
  delay(3);
  uint32_t d2 = ms5837_adc();
  if (d1 == 0 || d2 == 0) return NAN;  // the sensor did not answer: no reading this time
  int32_t dT = d2 - (uint32_t)prom[5] * 256l;
  int32_t temp = 2000l + (int64_t)dT * prom[6] / 8388608LL;
  int64_t off = (int64_t)prom[2] * 65536l + ((int64_t)prom[4] * dT) / 128l;
  int64_t sens = (int64_t)prom[1] * 32768l + ((int64_t)prom[3] * dT) / 256l;
  int64_t offi, sensi;
  if (temp / 100 < 20) {
    offi = 3 * (int64_t)(temp - 2000) * (temp - 2000) / 2;
    sensi = 5 * (int64_t)(temp - 2000) * (temp - 2000) / 8;
  } else {
    offi = (int64_t)(temp - 2000) * (temp - 2000) / 16;
    sensi = 0;
  }
  off -= offi;
  sens -= sensi;
  int32_t p = ((int64_t)d1 * sens / 2097152l - off) / 8192l;  // 0.1 mbar
  return p * 10.0;
}

// ---- MPU-6050 (register map: PWR_MGMT_1 0x6B wakes it, GYRO_ZOUT 0x47) ----
void mpu_init() {
  Wire.beginTransmission(MPU_ADDR);
  Wire.write(0x6B);
  Wire.write(0);  // wake up
  Wire.endTransmission();
}

float mpu_yaw_rate_dps() {
  Wire.beginTransmission(MPU_ADDR);
  Wire.write(0x47);
  Wire.endTransmission(false);
  Wire.requestFrom(MPU_ADDR, (byte)2);
  int16_t gz = (Wire.read() << 8) | Wire.read();
  return gz / 131.0;  // +-250 deg/s full scale
}

// ---- thrusters ----
void esc_write(byte pin, float command) {  // -1..1 as 1100..1900 us
  int us = 1500 + (int)(constrain(command, -1, 1) * 400);
  if (pin == 9) OCR1A = us * 2 - 1;  // Timer 1 ticks are 0.5 us
  else OCR1B = us * 2 - 1;
}

void hbridge_write(byte pwm_pin, byte dir_pin, float command) {
  command = constrain(command, -1, 1);
  digitalWrite(dir_pin, command < 0 ? HIGH : LOW);
  analogWrite(pwm_pin, (int)(fabs(command) * 255));
}

void setup() {
  Serial.begin(115200);
  Wire.begin();
  pinMode(9, OUTPUT);
  pinMode(10, OUTPUT);
  pinMode(7, OUTPUT);
  pinMode(8, OUTPUT);
  // Timer 1: fast PWM with TOP = ICR1 (mode 14), clock / 8: 20 ms frames for the ESCs
  TCCR1A = _BV(COM1A1) | _BV(COM1B1) | _BV(WGM11);
  TCCR1B = _BV(WGM13) | _BV(WGM12) | _BV(CS11);
  ICR1 = 39999;
  esc_write(9, 0);
  esc_write(10, 0);
  mpu_init();
  sensor_ok = ms5837_init();
  if (!sensor_ok) Serial.println("MS5837 CRC mismatch: check the sensor");
  surface_pa = 101325;
  last_us = micros();
  Serial.println("rov_depth_heading: ready");
}

void loop() {
  unsigned long now = micros();
  float dt = (now - last_us) * 1e-6;
  last_us = now;
  if (sensor_ok) {
    float p = ms5837_pressure_pa();
    if (isnan(p)) {
      if (!sensor_lost) Serial.println("MS5837 not answering: holding the last depth");
      sensor_lost = true;
    } else {
      float d = (p - surface_pa) / (FLUID_DENSITY * 9.80665);
      if (dt > 0) depth_rate += ((d - depth_m) / dt - depth_rate) * 0.2;  // filtered
      depth_m = d;
      sensor_lost = false;
    }
  }
  yaw_rate_dps = mpu_yaw_rate_dps();
  heading_deg += yaw_rate_dps * dt;

  float error = TARGET_DEPTH_M - depth_m;
  float vertical = DEPTH_KP * error + DEPTH_KI * depth_integral - DEPTH_KD * depth_rate;
  if (fabs(vertical) < 1) depth_integral = constrain(depth_integral + error * dt, -2, 2);  // no wind-up
  // turned left (counter-clockwise, heading > 0): push the left thruster harder to turn back
  float turn = HEADING_KP * heading_deg + HEADING_KD * yaw_rate_dps;
  turn = constrain(turn, -0.5, 0.5);
  esc_write(9, CRUISE + turn);    // left
  esc_write(10, CRUISE - turn);   // right
  hbridge_write(5, 7, vertical);  // front
  hbridge_write(6, 8, vertical);  // rear

  if (millis() - last_print_ms >= 1000) {
    last_print_ms = millis();
    Serial.print("depth ");
    Serial.print(depth_m, 2);
    Serial.print(" m, heading ");
    Serial.print(heading_deg, 1);
    Serial.println(" deg");
  }
}
