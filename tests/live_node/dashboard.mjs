// SPDX-License-Identifier: Apache-2.0
// Opens the live server's built-in dashboard (GET /) in headless Chromium and drives it
// over the DevTools protocol (on the `ws` WebSocket): the page loads, its values change
// while the session runs, and a click on its Pause button pauses the session.
//
//   node dashboard.mjs http://127.0.0.1:PORT/
//
// Prints one JSON line with what it saw; exits 0 if every check held, 1 otherwise, 2 on
// usage, 3 when Chromium is missing or would not start.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";

const pageUrl = process.argv[2];
if (!pageUrl) {
  console.error("usage: node dashboard.mjs http://HOST:PORT/");
  process.exit(2);
}

const failures = [];
const seen = {};
let browser;
let profile;
let finishing = false;
async function finish(code) {
  finishing = true;
  if (browser && browser.exitCode === null && browser.signalCode === null) {
    const exited = new Promise((resolve) => browser.once("exit", resolve));
    browser.kill("SIGKILL");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
  }
  try {
    if (profile) rmSync(profile, { recursive: true, force: true, maxRetries: 5 });
  } catch {
    // a profile folder left in the temporary directory is no failure of the page
  }
  console.log(JSON.stringify({ ok: code === 0 && failures.length === 0, failures, seen }));
  process.exit(code !== 0 ? code : failures.length ? 1 : 0);
}
const guard = setTimeout(() => {
  failures.push("timed out (120 s)");
  finish(1);
}, 120_000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const exe = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
if (!exe) {
  failures.push("chromium is not installed (scripts/deps.sh installs it)");
  finish(3);
}
profile = mkdtempSync(join(tmpdir(), "tether-dashboard-"));
browser = spawn(
  exe,
  [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    `--user-data-dir=${profile}`,
    "about:blank",
  ],
  { stdio: ["ignore", "ignore", "pipe"] },
);
let browserErr = "";
browser.stderr.on("data", (d) => {
  browserErr = (browserErr + d).slice(-4000);
});
browser.on("exit", (code) => {
  if (!finishing && code !== null && code !== 0) {
    failures.push(`chromium exited with ${code}: ${browserErr}`);
    finish(3);
  }
});

// the DevTools port Chromium chose
let port;
for (let i = 0; i < 600 && !port; i++) {
  try {
    port = Number(readFileSync(join(profile, "DevToolsActivePort"), "utf8").split("\n")[0]);
  } catch {
    await sleep(100);
  }
}
if (!port) {
  failures.push(`chromium did not open its DevTools port: ${browserErr}`);
  finish(3);
}

let target;
for (let i = 0; i < 100 && !target; i++) {
  try {
    const list = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
    target = list.find((t) => t.type === "page");
  } catch {
    await sleep(100);
  }
}
if (!target) {
  failures.push("no page target in Chromium");
  finish(3);
}

const cdp = new WebSocket(target.webSocketDebuggerUrl);
await new Promise((resolve, reject) => {
  cdp.on("open", resolve);
  cdp.on("error", reject);
});
let nextId = 1;
const waiting = new Map();
cdp.on("message", (data) => {
  const m = JSON.parse(data.toString());
  if (m.id && waiting.has(m.id)) {
    waiting.get(m.id)(m);
    waiting.delete(m.id);
  }
});
function send(method, params = {}) {
  const id = nextId++;
  cdp.send(JSON.stringify({ id, method, params }));
  return new Promise((resolve) => waiting.set(id, resolve));
}
async function evaluate(expression) {
  const r = await send("Runtime.evaluate", { expression, returnByValue: true });
  if (r.error || r.result?.exceptionDetails) throw new Error(JSON.stringify(r.error ?? r.result.exceptionDetails));
  return r.result.result.value;
}
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
  cdp.close();
  finish(0);
} catch (e) {
  failures.push(String(e?.stack ?? e));
  finish(1);
}
