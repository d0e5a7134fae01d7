// SPDX-License-Identifier: Apache-2.0
// Opens Tether's HTML pages (session reports, bench/correction's page) in headless Chromium,
// as a reader would from a file: each must load without a script error, a console error or
// any request outside the file (the pages are self-contained), and show its plots — every
// `svg.plot` with its frame unfilled and something drawn, whatever stylesheet the page has
// (the plots carry their own colours and strokes). With --screenshots DIR, a PNG of each
// whole page is written there, named after the file.
//
//   node report_page.mjs [--screenshots DIR] [--min-plots N] FILE.html...
//
// Prints one JSON line per page; exits 0 if every page passed, 1 otherwise, 2 on usage, 3
// when Chromium is missing or would not start.

import { writeFileSync } from "node:fs";
import { basename, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { openChromium, sleep } from "./chromium.mjs";

const args = process.argv.slice(2);
let shots = null;
let minPlots = 1;
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--screenshots") shots = args[++i];
  else if (args[i] === "--min-plots") minPlots = Number(args[++i]);
  else files.push(args[i]);
}
if (files.length === 0 || !(minPlots >= 0)) {
  console.error("usage: node report_page.mjs [--screenshots DIR] [--min-plots N] FILE.html...");
  process.exit(2);
}

let chromium;
try {
  chromium = await openChromium("report");
} catch (e) {
  console.log(JSON.stringify({ ok: false, failures: [String(e?.message ?? e)] }));
  process.exit(e?.missing ? 3 : 1);
}
const { send, evaluate, onEvent } = chromium;
let problems = [];
let loaded = false;
onEvent((m) => {
  if (m.method === "Runtime.exceptionThrown")
    problems.push(`script error: ${m.params.exceptionDetails?.exception?.description ?? m.params.exceptionDetails?.text}`);
  if (m.method === "Runtime.consoleAPICalled" && m.params.type === "error")
    problems.push(`console error: ${m.params.args.map((a) => a.value ?? a.description).join(" ")}`);
  if (m.method === "Log.entryAdded" && m.params.entry.level === "error") problems.push(`log error: ${m.params.entry.text}`);
  if (m.method === "Network.requestWillBeSent") {
    const url = m.params.request.url;
    if (!url.startsWith("file:") && !url.startsWith("data:") && !url.startsWith("about:"))
      problems.push(`request outside the page: ${url}`);
  }
  if (m.method === "Page.loadEventFired") loaded = true;
});
for (const method of ["Page.enable", "Runtime.enable", "Log.enable", "Network.enable"]) await send(method);
await send("Emulation.setDeviceMetricsOverride", { width: 1400, height: 900, deviceScaleFactor: 1, mobile: false });

let failed = 0;
for (const file of files) {
  problems = [];
  loaded = false;
  const seen = {};
  try {
    await send("Page.navigate", { url: pathToFileURL(resolve(file)).href });
    for (let i = 0; i < 300 && !loaded; i++) await sleep(100);
    if (!loaded) problems.push("the page did not finish loading in 30 s");
    await sleep(200);  // scripts that run after load (none today) get their turn
    Object.assign(
      seen,
      JSON.parse(
        await evaluate(`JSON.stringify((() => {
          const plots = [...document.querySelectorAll("svg.plot")];
          const filledFrames = plots.filter((p) => {
            const f = p.querySelector("rect.frame");
            return !f || getComputedStyle(f).fill !== "none";
          }).length;
          const empty = plots.filter((p) => p.querySelectorAll("path, circle, g rect").length === 0
                                             && !p.textContent.includes("no data")).length;
          const unlabelled = plots.filter((p) => p.querySelectorAll("text").length < 3).length;
          return { title: document.title, plots: plots.length, filledFrames, empty, unlabelled,
                   sections: [...document.querySelectorAll("h2")].map((h) => h.textContent),
                   height: document.documentElement.scrollHeight };
        })())`),
      ),
    );
    if (seen.plots < minPlots) problems.push(`${seen.plots} plots, expected at least ${minPlots}`);
    if (seen.filledFrames) problems.push(`${seen.filledFrames} plots draw a filled frame (a black box)`);
    if (seen.empty) problems.push(`${seen.empty} plots draw nothing and do not say "no data"`);
    if (seen.unlabelled) problems.push(`${seen.unlabelled} plots have no title, ticks or labels`);
    if (shots) {
      const height = Math.min(Math.max(900, seen.height), 16000);
      await send("Emulation.setDeviceMetricsOverride", { width: 1400, height, deviceScaleFactor: 1, mobile: false });
      const shot = await send("Page.captureScreenshot", { format: "png" });
      await send("Emulation.setDeviceMetricsOverride", { width: 1400, height: 900, deviceScaleFactor: 1, mobile: false });
      if (shot.result?.data) {
        seen.screenshot = `${shots}/${basename(file).replace(/\.html?$/, "")}.png`;
        writeFileSync(seen.screenshot, Buffer.from(shot.result.data, "base64"));
      } else {
        problems.push(`no screenshot: ${JSON.stringify(shot.error)}`);
      }
    }
  } catch (e) {
    problems.push(String(e?.stack ?? e));
  }
  if (problems.length) failed++;
  console.log(JSON.stringify({ file, ok: problems.length === 0, failures: problems, ...seen }));
}
await chromium.close();
process.exit(failed ? 1 : 0);
