// SPDX-License-Identifier: Apache-2.0
// Headless Chromium for the page checks (dashboard.mjs, report_page.mjs): starts it with a
// fresh profile, finds its DevTools port and first page, and talks the DevTools protocol
// over the `ws` WebSocket. Throws an Error with `missing = true` when Chromium is not
// installed or would not start (the scripts exit 3 then).

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function missing(message) {
  const e = new Error(message);
  e.missing = true;
  return e;
}

export async function openChromium(name) {
  const exe = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
  if (!exe) throw missing("chromium is not installed (scripts/deps.sh installs it)");
  const profile = mkdtempSync(join(tmpdir(), `tether-${name}-`));
  const browser = spawn(
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
  let closing = false;
  browser.stderr.on("data", (d) => {
    browserErr = (browserErr + d).slice(-4000);
  });
  const exited = new Promise((resolve) => browser.once("exit", resolve));
  async function close() {
    closing = true;
    if (browser.exitCode === null && browser.signalCode === null) {
      browser.kill("SIGKILL");
      await Promise.race([exited, sleep(5000)]);
    }
    try {
      rmSync(profile, { recursive: true, force: true, maxRetries: 5 });
    } catch {
      // a profile folder left in the temporary directory is no failure of the page
    }
  }
  let died = null;
  browser.on("exit", (code) => {
    if (!closing && code !== null && code !== 0) died = `chromium exited with ${code}: ${browserErr}`;
  });

  // the DevTools port Chromium chose, and its page
  let port;
  for (let i = 0; i < 600 && !port && !died; i++) {
    try {
      port = Number(readFileSync(join(profile, "DevToolsActivePort"), "utf8").split("\n")[0]);
    } catch {
      await sleep(100);
    }
  }
  if (!port) {
    await close();
    throw missing(died ?? `chromium did not open its DevTools port: ${browserErr}`);
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
    await close();
    throw missing("no page target in Chromium");
  }

  const cdp = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    cdp.on("open", resolve);
    cdp.on("error", reject);
  });
  let nextId = 1;
  const waiting = new Map();
  const listeners = [];
  cdp.on("message", (data) => {
    const m = JSON.parse(data.toString());
    if (m.id && waiting.has(m.id)) {
      waiting.get(m.id)(m);
      waiting.delete(m.id);
    } else if (m.method) {
      for (const l of listeners) l(m);
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
  return {
    send,
    evaluate,
    onEvent: (f) => listeners.push(f),
    close: async () => {
      cdp.close();
      await close();
    },
  };
}
