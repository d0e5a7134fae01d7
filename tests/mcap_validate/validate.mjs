// SPDX-License-Identifier: Apache-2.0
// Cross-checks MCAP files written by Tether with the reference TypeScript
// readers (@mcap/core), so our writer is judged by someone else's parser.
//
//   node validate.mjs [--truncated] [--expect-messages=N] [--foxglove] FILE...
//
// Complete files: read with McapIndexedReader (footer, summary, summary CRC,
// chunk indexes, message indexes, chunk and attachment CRCs) and with
// McapStreamReader (every record front to back, chunk CRCs), check the data
// section CRC ourselves, and require both readers to agree with each other
// and with the Statistics record.
// --truncated: a file cut short (recorder killed); only the stream reader
// applies. It must read every complete chunk without throwing.
// --foxglove: also decode every message of every channel the way Foxglove does: a channel
// must use an encoding Foxglove decodes (json with a jsonschema schema, or protobuf with a
// FileDescriptorSet), every protobuf message must decode with protobufjs against its
// channel's descriptor, every JSON message must parse and validate against its channel's
// JSON Schema, and every foxglove.* schema must be the official one from @foxglove/schemas
// (so its messages validate against the published definition).
// Prints one JSON line per file; exits 1 if any file fails.

import { McapIndexedReader, McapStreamReader } from "@mcap/core";
import { FileHandleReadable } from "@mcap/nodejs";
import { loadDecompressHandlers } from "@mcap/support";
import { open, readFile } from "node:fs/promises";
import foxgloveSchemas from "@foxglove/schemas/jsonschema.js";
import Ajv from "ajv";
import protobuf from "protobufjs";
import descriptor from "protobufjs/ext/descriptor/index.js";
import zlib from "node:zlib";

function crc32(bytes) {
  if (typeof zlib.crc32 === "function") return zlib.crc32(bytes) >>> 0;
  let c = ~0;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  }
  return ~c >>> 0;
}

function increment(map, key) {
  map[key] = (map[key] ?? 0) + 1;
}

function streamRead(bytes, decompressHandlers) {
  const reader = new McapStreamReader({ validateCrcs: true, decompressHandlers, includeChunks: true });
  reader.append(bytes);
  const counts = {};
  const perChannel = {};
  let header;
  let statistics;
  for (let record; (record = reader.nextRecord()); ) {
    increment(counts, record.type);
    if (record.type === "Message") increment(perChannel, record.channelId);
    if (record.type === "Header") header = record;
    if (record.type === "Statistics") statistics = record;
  }
  return { counts, perChannel, header, statistics, done: reader.done(), bytesRemaining: reader.bytesRemaining() };
}

async function indexedRead(path, decompressHandlers) {
  const handle = await open(path, "r");
  try {
    const reader = await McapIndexedReader.Initialize({
      readable: new FileHandleReadable(handle),
      decompressHandlers,
    });
    const perChannel = {};
    let messages = 0;
    let lastLogTime = -1n;
    for await (const message of reader.readMessages({ validateCrcs: true })) {
      messages++;
      increment(perChannel, message.channelId);
      if (message.logTime < lastLogTime) throw new Error("indexed reader returned messages out of log-time order");
      lastLogTime = message.logTime;
    }
    let attachments = 0;
    for await (const attachment of reader.readAttachments({ validateCrcs: true })) {
      void attachment;
      attachments++;
    }
    let metadata = 0;
    for await (const record of reader.readMetadata()) {
      void record;
      metadata++;
    }
    return {
      messages,
      perChannel,
      attachments,
      metadata,
      chunks: reader.chunkIndexes.length,
      channels: reader.channelsById.size,
      schemas: reader.schemasById.size,
      statistics: reader.statistics,
      dataEndOffset: reader.dataEndOffset,
      dataSectionCrc: reader.dataSectionCrc,
      profile: reader.header.profile,
      library: reader.header.library,
    };
  } finally {
    await handle.close();
  }
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

function sameCounts(a, b) {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) if ((a[k] ?? 0) !== (b[k] ?? 0)) return false;
  return true;
}

async function validateComplete(path, decompressHandlers, expectMessages) {
  const bytes = await readFile(path);
  const indexed = await indexedRead(path, decompressHandlers);
  const stream = streamRead(bytes, decompressHandlers);
  const streamMessages = stream.counts.Message ?? 0;

  check(stream.done, `stream reader did not reach the footer (${stream.bytesRemaining} bytes unparsed)`);
  check(indexed.messages === streamMessages, `indexed reader read ${indexed.messages} messages, stream reader ${streamMessages}`);
  check(sameCounts(indexed.perChannel, stream.perChannel), "per-channel message counts differ between the readers");
  check(indexed.attachments === (stream.counts.Attachment ?? 0), "attachment counts differ between the readers");
  check(indexed.metadata === (stream.counts.Metadata ?? 0), "metadata counts differ between the readers");
  check(indexed.chunks === (stream.counts.Chunk ?? 0), "chunk index count differs from the chunks in the file");

  const stats = indexed.statistics;
  check(stats !== undefined, "no Statistics record in the summary");
  check(stats.messageCount === BigInt(indexed.messages), `statistics say ${stats.messageCount} messages, read ${indexed.messages}`);
  check(stats.chunkCount === indexed.chunks, `statistics say ${stats.chunkCount} chunks, found ${indexed.chunks}`);
  check(stats.attachmentCount === indexed.attachments, "statistics attachment count is wrong");
  check(stats.metadataCount === indexed.metadata, "statistics metadata count is wrong");
  check(stats.channelCount === indexed.channels, "statistics channel count is wrong");
  check(stats.schemaCount === indexed.schemas, "statistics schema count is wrong");
  for (const [channelId, count] of stats.channelMessageCounts) {
    check(count === BigInt(indexed.perChannel[channelId] ?? 0), `statistics count for channel ${channelId} is wrong`);
  }

  // neither reader checks the Data End CRC; do it here
  if (indexed.dataSectionCrc !== undefined) {
    const computed = crc32(bytes.subarray(0, Number(indexed.dataEndOffset)));
    check(computed === indexed.dataSectionCrc, `data section CRC ${computed} != stored ${indexed.dataSectionCrc}`);
  }
  if (expectMessages !== undefined) {
    check(indexed.messages === expectMessages, `expected ${expectMessages} messages, read ${indexed.messages}`);
  }
  return {
    messages: indexed.messages,
    chunks: indexed.chunks,
    channels: indexed.channels,
    schemas: indexed.schemas,
    attachments: indexed.attachments,
    metadata: indexed.metadata,
    library: indexed.library,
  };
}

async function validateTruncated(path, decompressHandlers, expectMessages) {
  const bytes = await readFile(path);
  const stream = streamRead(bytes, decompressHandlers);
  const messages = stream.counts.Message ?? 0;
  check(stream.header !== undefined, "stream reader found no Header");
  if (expectMessages !== undefined) {
    check(messages === expectMessages, `expected ${expectMessages} messages before the cut, read ${messages}`);
  }
  return {
    messages,
    chunks: stream.counts.Chunk ?? 0,
    records: stream.counts,
    reachedFooter: stream.done,
    bytesUnparsed: stream.bytesRemaining,
  };
}

function deepEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
}

// How Foxglove turns a channel into a message decoder; throws what Foxglove would report.
function channelDecoder(channel, schema, ajv) {
  const where = `channel ${channel.topic}`;
  if (channel.messageEncoding === "json") {
    if (!schema) return { decode: (bytes) => JSON.parse(new TextDecoder().decode(bytes)) };
    check(schema.encoding === "jsonschema", `${where}: json with a schema of encoding "${schema.encoding}"`);
    const text = new TextDecoder().decode(schema.data);
    const parsed = JSON.parse(text);
    if (schema.name.startsWith("foxglove.")) {
      const official = foxgloveSchemas[schema.name.slice("foxglove.".length)];
      check(official !== undefined, `${where}: ${schema.name} is not a schema of @foxglove/schemas`);
      check(deepEqual(parsed, official), `${where}: ${schema.name} differs from the published @foxglove/schemas one`);
    }
    const validate = ajv.compile(parsed);
    return {
      decode: (bytes) => {
        const message = JSON.parse(new TextDecoder().decode(bytes));
        if (!validate(message)) throw new Error(`${schema.name}: ${ajv.errorsText(validate.errors)}`);
        return message;
      },
    };
  }
  if (channel.messageEncoding === "protobuf") {
    check(schema && schema.encoding === "protobuf", `${where}: protobuf without a protobuf schema`);
    const set = descriptor.FileDescriptorSet.decode(schema.data);
    const root = protobuf.Root.fromDescriptor(set);
    root.resolveAll();
    const type = root.lookupType(schema.name);
    return { decode: (bytes) => type.toObject(type.decode(bytes), { longs: String, enums: String, defaults: true }) };
  }
  throw new Error(`${where}: message encoding "${channel.messageEncoding}" is not one Foxglove decodes`);
}

async function validateFoxglove(path, decompressHandlers) {
  const handle = await open(path, "r");
  try {
    const reader = await McapIndexedReader.Initialize({ readable: new FileHandleReadable(handle), decompressHandlers });
    const ajv = new Ajv({ allErrors: false, strict: false });
    const decoders = new Map();
    for (const [id, channel] of reader.channelsById) {
      const schema = channel.schemaId ? reader.schemasById.get(channel.schemaId) : undefined;
      if (schema && schema.data.length > 0) check(schema.encoding !== "", `schema ${schema.name}: data without an encoding`);
      decoders.set(id, { channel, schema, ...channelDecoder(channel, schema, ajv) });
    }
    const perTopic = {};
    const last = {};
    for await (const message of reader.readMessages()) {
      const d = decoders.get(message.channelId);
      let decoded;
      try {
        decoded = d.decode(message.data);
      } catch (error) {
        throw new Error(`${d.channel.topic} at log time ${message.logTime}: ${error?.message ?? error}`);
      }
      perTopic[d.channel.topic] = (perTopic[d.channel.topic] ?? 0) + 1;
      if (d.channel.topic === "/tether/step") {
        // consecutive steps, each carrying its format version
        check(decoded.formatVersion === 2 || decoded.format_version === 2, "a step record without format_version 2");
        const step = BigInt(decoded.step);
        if (last.step !== undefined) check(step === last.step + 1n, `step ${step} after ${last.step}`);
        last.step = step;
        last.hash = BigInt(decoded.stateHash ?? decoded.state_hash).toString(16).padStart(16, "0");
      }
      if (d.channel.topic === "/tether/summary") last.summaryHash = decoded.state_hash;
    }
    // the last step record's hash, as protobufjs reads it, is the summary's final state hash
    if (last.hash !== undefined && last.summaryHash !== undefined)
      check(last.hash === last.summaryHash, `last step's state_hash ${last.hash} != summary's ${last.summaryHash}`);
    return { foxglove: true, topics: Object.keys(perTopic).length, lastStateHash: last.hash ?? null, perTopic };
  } finally {
    await handle.close();
  }
}

async function main() {
  const args = process.argv.slice(2);
  const truncated = args.includes("--truncated");
  const foxglove = args.includes("--foxglove");
  const expectArg = args.find((a) => a.startsWith("--expect-messages="));
  const expectMessages = expectArg ? Number(expectArg.split("=")[1]) : undefined;
  const files = args.filter((a) => !a.startsWith("--"));
  if (files.length === 0) {
    console.error("usage: node validate.mjs [--truncated] [--expect-messages=N] [--foxglove] FILE...");
    process.exit(2);
  }
  const decompressHandlers = await loadDecompressHandlers();
  let failed = 0;
  for (const file of files) {
    try {
      let result = truncated
        ? await validateTruncated(file, decompressHandlers, expectMessages)
        : await validateComplete(file, decompressHandlers, expectMessages);
      if (foxglove && !truncated) result = { ...result, ...(await validateFoxglove(file, decompressHandlers)) };
      console.log(JSON.stringify({ file, ok: true, mode: truncated ? "truncated" : "complete", ...result }));
    } catch (error) {
      failed++;
      console.log(JSON.stringify({ file, ok: false, mode: truncated ? "truncated" : "complete", error: String(error?.message ?? error) }));
    }
  }
  process.exit(failed === 0 ? 0 : 1);
}

await main();
