// SPDX-License-Identifier: Apache-2.0
// Drives a running `tether run --live` with the reference foxglove.websocket.v1 client
// (@foxglove/ws-protocol on the `ws` WebSocket), so our server is judged by someone
// else's client: serverInfo and the advertised channels, pose messages whose simulation
// time increases, /tether/pause (time stops), /tether/step {steps: 10} (exactly 10 steps),
// /tether/apply_force (the body moves), /tether/resume, /tether/shutdown.
//
//   node client.mjs ws://127.0.0.1:PORT
//
// Prints one JSON line with what it saw; exits 0 if every check held, 1 otherwise (the
// line says which failed), 2 on usage, 3 when it could not talk to the server at all.

import wsProtocol from "@foxglove/ws-protocol"; // CommonJS: its exports come as the default
import WebSocket from "ws";

const { FoxgloveClient } = wsProtocol;

const url = process.argv[2];
if (!url) {
  console.error("usage: node client.mjs ws://HOST:PORT");
  process.exit(2);
}

const failures = [];
const seen = {};
function check(ok, what) {
  if (!ok) failures.push(what);
}
function finish(code) {
  console.log(JSON.stringify({ ok: code === 0 && failures.length === 0, failures, seen }));
  process.exit(code !== 0 ? code : failures.length ? 1 : 0);
}
const guard = setTimeout(() => {
  failures.push("timed out (120 s)");
  finish(1);
}, 120_000);

const client = new FoxgloveClient({ ws: new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]) });
const encoder = new TextEncoder();
const decoder = new TextDecoder();

let serverInfo;
let channels = [];
let services = [];
const ready = {};
const readyPromise = new Promise((resolve) => {
  ready.resolve = resolve;
});
function maybeReady() {
  if (serverInfo && channels.length && services.length) ready.resolve();
}
client.on("error", (e) => {
  failures.push(`websocket error: ${e?.message ?? e}`);
  finish(3);
});
client.on("serverInfo", (info) => {
  serverInfo = info;
  maybeReady();
});
client.on("advertise", (chs) => {
  channels = channels.concat(chs);
  maybeReady();
});
client.on("advertiseServices", (svs) => {
  services = services.concat(svs);
  maybeReady();
});

// messages of the subscriptions, by subscription id: {time (ns, bigint), json}
const received = new Map();
client.on("message", ({ subscriptionId, timestamp, data }) => {
  const list = received.get(subscriptionId) ?? [];
  list.push({ time: timestamp, json: JSON.parse(decoder.decode(data)) });
  received.set(subscriptionId, list);
});
const times = [];
client.on("time", ({ timestamp }) => times.push(timestamp));

let nextCall = 1;
const pending = new Map();
client.on("serviceCallResponse", ({ callId, data }) => {
  const p = pending.get(callId);
  if (!p) return;
  pending.delete(callId);
  p(JSON.parse(decoder.decode(data)));
});
function call(name, request = {}) {
  const service = services.find((s) => s.name === name);
  if (!service) throw new Error(`no service ${name}`);
  const callId = nextCall++;
  const answer = new Promise((resolve) => pending.set(callId, resolve));
  client.sendServiceCallRequest({
    serviceId: service.id,
    callId,
    encoding: "json",
    data: encoder.encode(JSON.stringify(request)),
  });
  return answer;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, predicate) {
  for (let i = 0; i < 1200; i++) {
    if (predicate()) return true;
    await sleep(50);
  }
  failures.push(`never happened: ${what}`);
  return false;
}

try {
  await readyPromise;
  check(serverInfo.capabilities.includes("time"), "capability time");
  check(serverInfo.capabilities.includes("services"), "capability services");
  check(serverInfo.capabilities.includes("parameters"), "capability parameters");
  const topics = new Map(channels.map((c) => [c.topic, c]));
  seen.topics = [...topics.keys()].sort();
  const pose = topics.get("/vehicles/auv/pose");
  const vehicles = topics.get("/tether/vehicles");
  check(pose?.schemaName === "foxglove.PoseInFrame" && pose?.encoding === "json", "pose channel foxglove.PoseInFrame");
  check(topics.get("/tf")?.schemaName === "foxglove.FrameTransform", "/tf channel foxglove.FrameTransform");
  check(!topics.has("/tether/step"), "binary replay channels not advertised");
  const poseSub = client.subscribe(pose.id);
  const vehiclesSub = client.subscribe(vehicles.id);

  // running: pose messages arrive with increasing simulation time
  await until("5 pose messages", () => (received.get(poseSub) ?? []).length >= 5);
  const early = received.get(poseSub).slice(0, 5).map((m) => m.time);
  check(early.every((t, i) => i === 0 || t > early[i - 1]), "pose times increase");

  // pause: time stops. Message times are simulation time: the message of step k carries
  // S_(k+1) at (k+1) * 10 ms, so with the session paused before step P the last one is at
  // P * 10 ms and none comes after it
  const period = 10_000_000n;
  let s = await call("/tether/pause");
  check(s.ok === true && s.paused === true, "pause answered paused");
  const pausedAt = s.step;
  seen.paused_at_step = pausedAt;
  const tPaused = BigInt(pausedAt) * period;
  const poses = () => received.get(poseSub) ?? [];
  await until("the pose message of the last step before the pause", () => poses().some((m) => m.time === tPaused));
  await sleep(300);
  s = await call("/tether/status");
  check(s.step === pausedAt, "no step while paused");
  check(!poses().some((m) => m.time > tPaused), "no pose message after the pause");

  // step 10: exactly 10 steps, answered when they are done
  s = await call("/tether/step", { steps: 10 });
  check(s.ok === true && s.step === pausedAt + 10, "step 10 answered at paused step + 10");
  await until("the pose message of the 10th step", () => poses().some((m) => m.time === tPaused + 10n * period));
  await sleep(300);
  const stepped = poses().filter((m) => m.time > tPaused);
  seen.pose_messages_after_step_10 = stepped.length;
  check(stepped.length === 10, "exactly 10 pose messages for step 10");
  check(
    stepped.every((m, i) => m.time === tPaused + BigInt(i + 1) * period),
    "their times one period apart, in order",
  );
  s = await call("/tether/status");
  check(s.step === pausedAt + 10 && s.paused === true, "paused again after the steps");

  // a push north (world axes) for 1 s of simulation time: the AUV moves north
  const yAt = (step) => {
    const m = (received.get(vehiclesSub) ?? []).find((v) => v.json.step === step);
    return m ? m.json.vehicles[0].y_m : undefined;
  };
  const y0 = yAt(pausedAt + 9);
  const f = await call("/tether/apply_force", {
    name: "push",
    body: "auv",
    force: [0, 150, 0],
    frame: "world",
    duration_s: 1.0,
  });
  check(f.ok === true && f.accepted === true && f.takes_effect_at_step === pausedAt + 10, "apply_force accepted");
  s = await call("/tether/step", { steps: 100 });
  check(s.step === pausedAt + 110, "step 100");
  await until("the vehicles message of the last step", () => yAt(pausedAt + 109) !== undefined);
  const y1 = yAt(pausedAt + 109);
  seen.y_moved_m = y1 - y0;
  check(y1 - y0 > 0.3, "the push moved the AUV north");

  // resume: it runs again
  s = await call("/tether/resume");
  check(s.ok === true && s.paused === false, "resume answered running");
  await until("steps after resume", () => poses().some((m) => m.time > tPaused + 111n * period));
  check(times.length > 0, "time messages");
  check(times.every((t, i) => i === 0 || t >= times[i - 1]), "time messages never go back");

  s = await call("/tether/shutdown");
  check(s.ok === true, "shutdown accepted");
  clearTimeout(guard);
  client.close();
  finish(0);
} catch (e) {
  failures.push(String(e?.stack ?? e));
  finish(1);
}
