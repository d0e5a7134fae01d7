// SPDX-License-Identifier: Apache-2.0
// Opens Tether's HTML pages (session reports, bench/correction's page) in headless Chromium,
// as a reader would from a file: each must load without a script error, a console error or
// any request outside the file (the pages are self-contained), and show its plots — every
// `svg.plot` with its frame unfilled and something drawn, whatever stylesheet the page has
// (the plots carry their own colours and strokes). Where a page draws its time series with
// dygraphs (the session report), each must have become a live chart, and the first one
// must answer the mouse as a reader uses it: hovering shows values in its legend, dragging
// across it zooms in, a double-click zooms back out. With --screenshots DIR, a PNG of each
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

// hover, drag and double-click on the first live chart with real mouse events
async function mouse(seen) {
  const out = [];
  await evaluate("document.querySelector('div.iplot.live').scrollIntoView({block: 'center'})");
  await sleep(100);
  const box = JSON.parse(
    await evaluate(`JSON.stringify((() => {
      const g = window.tetherPlots[0];
      const a = g.getArea();
      const r = g.graphDiv.getBoundingClientRect();
      return { x: r.left + a.x, y: r.top + a.y, w: a.w, h: a.h };
    })())`),
  );
  const at = (fx, fy) => ({ x: box.x + box.w * fx, y: box.y + box.h * fy });
  const move = (p, extra = {}) => send("Input.dispatchMouseEvent", { type: "mouseMoved", x: p.x, y: p.y, ...extra });
  const legend = "window.tetherPlots[0].graphDiv.parentNode.querySelector('.dygraph-legend').textContent";
  const range = "JSON.stringify(window.tetherPlots[0].xAxisRange())";
  await move(at(0.5, 0.5));
  await sleep(150);
  seen.hover_legend = await evaluate(legend);
  if (!/[0-9]/.test(seen.hover_legend)) out.push(`hovering shows no value in the legend: "${seen.hover_legend}"`);
  const full = JSON.parse(await evaluate(range));
  const from = at(0.3, 0.5), to = at(0.6, 0.5);
  await move(from);
  await send("Input.dispatchMouseEvent", { type: "mousePressed", x: from.x, y: from.y, button: "left", clickCount: 1 });
  for (let k = 1; k <= 8; k++)
    await move({ x: from.x + ((to.x - from.x) * k) / 8, y: from.y }, { button: "left", buttons: 1 });
  await send("Input.dispatchMouseEvent", { type: "mouseReleased", x: to.x, y: to.y, button: "left", clickCount: 1 });
  await sleep(300);  // dygraphs animates the zoom
  const zoomed = JSON.parse(await evaluate(range));
  seen.zoom = { full, zoomed };
  if (!(zoomed[1] - zoomed[0] < 0.6 * (full[1] - full[0]))) out.push(`dragging did not zoom: ${JSON.stringify(seen.zoom)}`);
  for (const type of ["mousePressed", "mouseReleased"])
    await send("Input.dispatchMouseEvent", { type, x: to.x, y: to.y, button: "left", clickCount: 2 });
  await sleep(300);
  const reset = JSON.parse(await evaluate(range));
  if (Math.abs(reset[1] - reset[0] - (full[1] - full[0])) > 1e-9 * Math.abs(full[1] - full[0]))
    out.push(`a double-click did not zoom back out: ${JSON.stringify(reset)}`);
  return out;
}

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
    seen.interactive = await evaluate("document.querySelectorAll('div.iplot').length");
    if (seen.interactive > 0) {
      seen.live = await evaluate("(window.tetherPlots || []).length");
      if (seen.live !== seen.interactive) problems.push(`${seen.live} of ${seen.interactive} time series became live charts`);
      else problems.push(...(await mouse(seen)));
    }
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
