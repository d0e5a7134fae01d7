// SPDX-License-Identifier: Apache-2.0
// Tether's MAVLink 2 codec against node-mavlink (an independent implementation, generated from
// the same XML definitions). Run through run.sh:
//
//   node cross.mjs OURS.bin OURS.json OUT_DIR
//
// OURS.json (written by tests/adapters/mavlink/mavlink_cross_test.cpp) holds Tether's message table,
// its flight mode tables and, for each frame of OURS.bin, the header and field values Tether
// encoded. This script checks that
//   - every message's CRC_EXTRA, payload lengths and field list (wire order, extensions) are
//     node-mavlink's;
//   - node-mavlink's splitter takes every frame of OURS.bin (no checksum error, no unknown
//     message), its parser reads back each header and field value, and node-mavlink writes the
//     same message to the very same bytes;
//   - the SUB_MODE and ROVER_MODE tables are the same;
// then writes OUT_DIR/theirs.bin (frames node-mavlink encodes, with noise between them, one
// signed frame and one message Tether does not know) and OUT_DIR/theirs.json (what each frame
// holds, and what Tether's decoder must count), which the C++ test decodes in turn.
// Prints one JSON line {"ok", "failures", "seen"}; exit 0 when every check held, 1 otherwise,
// 2 on usage errors.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'

import {
  MavLinkPacketSplitter, MavLinkPacketParser, MavLinkProtocolV2, MavLinkPacketSignature,
  minimal, common, ardupilotmega,
} from 'node-mavlink'

const [oursBin, oursJson, outDir] = process.argv.slice(2)
if (!oursBin || !oursJson || !outDir) {
  console.error('usage: cross.mjs OURS.bin OURS.json OUT_DIR')
  process.exit(2)
}

const REGISTRY = { ...minimal.REGISTRY, ...common.REGISTRY, ...ardupilotmega.REGISTRY }
const SIZE = { int8_t: 1, uint8_t: 1, char: 1, uint8_t_mavlink_version: 1, int16_t: 2, uint16_t: 2,
  int32_t: 4, uint32_t: 4, float: 4, int64_t: 8, uint64_t: 8, double: 8 }

const failures = []
const seen = {}
function fail(what) {
  failures.push(what)
}

// a field's size in bytes: node-mavlink writes arrays as 'float[]' with a length
function fieldSize(f) {
  const base = f.type.replace('[]', '')
  return SIZE[base] * (f.type.endsWith('[]') ? f.length : 1)
}

// node-mavlink's value of a field, as Tether's JSON writes it
function plain(value) {
  if (typeof value === 'bigint') return Number(value)
  if (Array.isArray(value)) return value.map(plain)
  return value
}

function sameValue(a, b) {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameValue(x, b[i]))
  }
  return a === b
}

async function readPackets(buffer) {
  const splitter = new MavLinkPacketSplitter()
  const packets = []
  await new Promise((resolve, reject) => {
    Readable.from([buffer]).pipe(splitter).pipe(new MavLinkPacketParser())
      .on('data', (p) => packets.push(p)).on('end', resolve).on('error', reject)
  })
  return { packets, invalid: splitter.invalidPackages, unknown: splitter.unknownPackagesCount }
}

// ---- Tether's definitions against node-mavlink's -------------------------------------------

const ours = JSON.parse(readFileSync(oursJson, 'utf8'))
for (const m of ours.messages) {
  const clazz = REGISTRY[m.msgid]
  if (!clazz) {
    fail(`msgid ${m.msgid} (${m.name}): node-mavlink has no such message`)
    continue
  }
  if (clazz.MSG_NAME !== m.name) fail(`msgid ${m.msgid}: name ${m.name}, node-mavlink ${clazz.MSG_NAME}`)
  if (clazz.MAGIC_NUMBER !== m.crc_extra) fail(`${m.name}: CRC_EXTRA ${m.crc_extra}, node-mavlink ${clazz.MAGIC_NUMBER}`)
  if (clazz.PAYLOAD_LENGTH !== m.max_length) fail(`${m.name}: length ${m.max_length}, node-mavlink ${clazz.PAYLOAD_LENGTH}`)
  const base = clazz.FIELDS.filter((f) => !f.extension).reduce((n, f) => n + fieldSize(f), 0)
  if (base !== m.min_length) fail(`${m.name}: base length ${m.min_length}, node-mavlink ${base}`)
  const theirs = clazz.FIELDS.map((f) => `${f.source}${f.extension ? '+' : ''}@${f.offset}`).join(' ')
  const mine = m.fields.map((f) => `${f.name}${f.extension ? '+' : ''}@${f.offset}`).join(' ')
  if (theirs !== mine) fail(`${m.name}: fields\n  ours  ${mine}\n  theirs ${theirs}`)
}
seen.messages_compared = ours.messages.length

for (const [vehicle, nodeEnum] of [['sub', ardupilotmega.SubMode], ['rover', ardupilotmega.RoverMode]]) {
  const theirs = Object.fromEntries(Object.entries(nodeEnum).filter(([k]) => Number.isNaN(Number(k))))
  const mine = ours.modes[vehicle]
  const a = JSON.stringify(Object.entries(mine).sort())
  const b = JSON.stringify(Object.entries(theirs).sort())
  if (a !== b) fail(`${vehicle} modes differ:\n  ours   ${a}\n  theirs ${b}`)
}

// ---- Tether's frames, read by node-mavlink -------------------------------------------------

const oursBytes = readFileSync(oursBin)
const { packets, invalid, unknown } = await readPackets(oursBytes)
seen.our_frames_read = packets.length
if (invalid !== 0) fail(`node-mavlink found ${invalid} frame(s) with a bad checksum in ours`)
if (unknown !== 0) fail(`node-mavlink found ${unknown} unknown frame(s) in ours`)
if (packets.length !== ours.frames.length) fail(`node-mavlink read ${packets.length} frames, Tether wrote ${ours.frames.length}`)
let identical = 0
for (let i = 0; i < Math.min(packets.length, ours.frames.length); i++) {
  const p = packets[i]
  const want = ours.frames[i]
  const where = `frame ${i} (${want.name})`
  const h = p.header
  if (h.magic !== 0xFD || h.msgid !== want.msgid || h.seq !== want.seq || h.sysid !== want.sysid ||
      h.compid !== want.compid || h.payloadLength !== want.length || h.incompatibilityFlags !== 0) {
    fail(`${where}: header ${JSON.stringify(h, (k, v) => (typeof v === 'bigint' ? Number(v) : v))}`)
    continue
  }
  const clazz = REGISTRY[h.msgid]
  const data = p.protocol.data(p.payload, clazz)
  for (const f of clazz.FIELDS) {
    const got = plain(data[f.name])
    const expected = want.fields[f.source]
    if (!sameValue(got, expected)) fail(`${where}: ${f.source} = ${JSON.stringify(got)}, Tether wrote ${JSON.stringify(expected)}`)
  }
  // node-mavlink writes the same message to the same bytes
  const again = new MavLinkProtocolV2(h.sysid, h.compid).serialize(data, h.seq)
  if (Buffer.compare(again, p.buffer) === 0) identical++
  else fail(`${where}: node-mavlink writes ${again.toString('hex')}, Tether wrote ${p.buffer.toString('hex')}`)
}
seen.our_frames_identical_to_node = identical

// ---- node-mavlink's frames, for Tether to read --------------------------------------------

// field k of a message, element i: values that fit every type, negative where signed
function sampleValue(f, k, i) {
  const base = f.type.replace('[]', '')
  const n = 1 + ((k * 13 + i * 5) % 97)
  if (base === 'float') return Math.fround((k % 2 ? -0.375 : 0.625) * n)
  if (base === 'char') return `N${k}`
  if (base.startsWith('int')) return -n * (SIZE[base] > 1 ? 300 : 1)
  return n * (SIZE[base] > 1 ? 301 : 1)
}

function sample(clazz) {
  const msg = new clazz()
  const fields = {}
  clazz.FIELDS.forEach((f, k) => {
    let v
    if (f.type === 'char[]') v = sampleValue(f, k, 0)
    else if (f.type.endsWith('[]')) v = Array.from({ length: f.length }, (_, i) => sampleValue(f, k, i))
    else v = sampleValue(f, k, 0)
    msg[f.name] = v
    fields[f.source] = v
  })
  return { msg, fields }
}

const chunks = []
const expected = []
let seq = 200
for (const m of ours.messages) {
  const { msg, fields } = sample(REGISTRY[m.msgid])
  const protocol = new MavLinkProtocolV2(7, 42)
  chunks.push(protocol.serialize(msg, seq))
  expected.push({ msgid: m.msgid, name: m.name, seq, sysid: 7, compid: 42, fields })
  seq = (seq + 1) % 256
  if (m.msgid === 11) chunks.push(Buffer.from('noise between frames\n'))  // no 0xFD in it
}
// a message Tether does not know (SYSTEM_TIME), which its decoder skips by its length
const time = new common.SystemTime()
time.timeUnixUsec = 1700000000000000n
time.timeBootMs = 123456
chunks.push(new MavLinkProtocolV2(7, 42).serialize(time, seq))
seq = (seq + 1) % 256
// a signed frame, which Tether's decoder skips whole (it holds no key)
const hb = sample(minimal.Heartbeat)
const signer = new MavLinkProtocolV2(7, 42, MavLinkProtocolV2.IFLAG_SIGNED)
const key = MavLinkPacketSignature.key('tether cross-check')
chunks.push(signer.sign(signer.serialize(hb.msg, seq), 1, key, 1764000000000))
seq = (seq + 1) % 256
// and one more plain frame after them
const last = sample(common.Attitude)
chunks.push(new MavLinkProtocolV2(7, 42).serialize(last.msg, seq))
expected.push({ msgid: common.Attitude.MSG_ID, name: 'ATTITUDE', seq, sysid: 7, compid: 42, fields: last.fields })

const theirs = Buffer.concat(chunks)
writeFileSync(join(outDir, 'theirs.bin'), theirs)
writeFileSync(join(outDir, 'theirs.json'), JSON.stringify({
  frames: expected,
  expect: { signed_frames: 1, unknown_msgid: 1, bad_crc: 0 },
}, (k, v) => (typeof v === 'bigint' ? Number(v) : v)))
// node-mavlink reads its own stream back: the frames and the signed one
const own = await readPackets(theirs)
seen.their_frames_written = expected.length
seen.their_frames_node_reads = own.packets.length
if (own.invalid !== 0) fail(`node-mavlink cannot read its own stream: ${own.invalid} bad frame(s)`)

console.log(JSON.stringify({ ok: failures.length === 0, failures, seen }))
process.exit(failures.length === 0 ? 0 : 1)
