// SPDX-License-Identifier: Apache-2.0
// Opens the live server's built-in dashboard (GET /) in headless Chromium and drives it
// over the DevTools protocol (on the `ws` WebSocket): the page loads, its values change
// while the session runs, the plan view draws the tank and the vehicle, the counters and
// expectations are the session's, and a click on its Pause button pauses the session.
//
//   node dashboard.mjs http://127.0.0.1:PORT/
//   node dashboard.mjs http://127.0.0.1:PORT/ --cable NAME [--shot FILE.png]
//     (a session with a cable: only that the plan view draws cable NAME beside the vehicle,
//      and a screenshot of the page to look at)
//
// Prints one JSON line with what it saw; exits 0 if every check held, 1 otherwise, 2 on
// usage, 3 when Chromium is missing or would not start.

import { openChromium, sleep } from "./chromium.mjs";

const pageUrl = process.argv[2];
const option = (name) => {
  const at = process.argv.indexOf(name);
  return at > 2 ? process.argv[at + 1] : undefined;
};
const cableName = option("--cable"), shotFile = option("--shot");
if (!pageUrl) {
  console.error("usage: node dashboard.mjs http://HOST:PORT/");
  process.exit(2);
}

const failures = [];
const seen = {};
let chromium;
async function finish(code) {
  if (chromium) await chromium.close();
  console.log(JSON.stringify({ ok: code === 0 && failures.length === 0, failures, seen }));
  process.exit(code !== 0 ? code : failures.length ? 1 : 0);
}
const guard = setTimeout(() => {
  failures.push("timed out (120 s)");
  finish(1);
}, 120_000);

try {
  chromium = await openChromium("dashboard");
} catch (e) {
  failures.push(String(e?.message ?? e));
  await finish(e?.missing ? 3 : 1);
}
const { send, evaluate } = chromium;
const state = async () => JSON.parse(await evaluate("JSON.stringify(window.tetherDashboard ?? null)"));
async function until(what, predicate) {
  for (let i = 0; i < 600; i++) {
    const s = await state().catch(() => null);
    if (s && predicate(s)) return s;
    await sleep(100);
  }
  failures.push(`never happened: ${what}`);
  return null;
}

try {
  await send("Page.enable");
  await send("Page.navigate", { url: pageUrl });
  // the page loads and connects; values arrive and change while the session runs
  const first = await until("the page shows a status and messages", (s) => s.status && s.messages > 5);
  if (first && cableName) {
    const drawn = await until(`the plan view draws cable ${cableName} and the vehicle`,
                              (s) => s.plan.cables[cableName] >= 2 && s.plan.vehicles.length > 0);
    if (drawn) seen.plan = drawn.plan;
    if (shotFile) {
      await send("Emulation.setDeviceMetricsOverride", { width: 1400, height: 1100, deviceScaleFactor: 1, mobile: false });
      await sleep(300);
      const shot = await send("Page.captureScreenshot", { format: "png" });
      (await import("node:fs")).writeFileSync(shotFile, Buffer.from(shot.result.data, "base64"));
    }
    clearTimeout(guard);
    await finish(0);
  }
  if (first) {
    seen.title = await evaluate("document.title");
    const second = await until("the step shown changes", (s) => s.status.step > first.status.step + 5);
    if (second) {
      seen.steps_seen = [first.status.step, second.status.step];
      seen.messages = second.messages;
      seen.step_text = await evaluate("document.getElementById('step').textContent");
      seen.depth_text = await evaluate("document.getElementById('v_depth').textContent");
      if (!(Number(seen.step_text) > 0)) failures.push("the page shows no step");
      if (seen.depth_text === "") failures.push("the page shows no depth");
      // the plan view: the tank's walls from the latched /scene, the vehicle and its trail
      const planned = await until("the plan view has the tank and the vehicle's trail",
                                  (s) => s.plan.statics >= 4 && s.plan.vehicles.includes("auv") && s.plan.trail > 5);
      if (planned) seen.plan = planned.plan;
      // the counters are the session's (from /tether/status), not what the page saw
      const counted = await until("the page shows the session's counters", (s) => s.misses !== null);
      if (counted) {
        seen.counters_text = await evaluate("document.getElementById('counters').textContent");
        if (!seen.counters_text.startsWith("controller: replies ")) failures.push("no endpoint counters shown");
      }
      // the expectations' live state, one line each
      const judged = await until("the page lists the expectations", (s) => s.expectations && s.expectations.length > 0);
      if (judged) {
        seen.expectations = judged.expectations;
        seen.expect_items = await evaluate("document.querySelectorAll('#expect li').length");
      }
      seen.log_title = await evaluate("document.getElementById('log').previousElementSibling.textContent");
      // the actuator commands the controller gives (four thrusters in the scenario)
      const acts = await until("the page shows actuator commands", (s) => s.actuators && Object.keys(s.actuators).length >= 4);
      if (acts) {
        seen.actuators = acts.actuators;
        seen.actuator_text = await evaluate("document.getElementById('v_act').textContent");
        if (!seen.actuator_text.includes("thruster_left")) failures.push("the page names no thruster command");
      }
    }
    // the Pause button pauses the session
    await evaluate("document.getElementById('pause').click()");
    const paused = await until("the page shows the session paused", (s) => s.status.paused === true);
    if (paused) {
      seen.paused_at_step = paused.status.step;
      seen.state_text = await evaluate("document.getElementById('state').textContent");
      if (seen.state_text !== "paused") failures.push("the state shown is not 'paused'");
    }
  }
  clearTimeout(guard);
  finish(0);
} catch (e) {
  failures.push(String(e?.stack ?? e));
  finish(1);
}
