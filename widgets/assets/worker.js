// The module Worker: boots Pyodide from the site itself, installs the project wheel and
// the page language's strings, then answers {id, widget, state, lang} with Python's HTML.
// Replies carry the request id so the page can match them (Pyodide's webworker pattern).
// The Pyodide folder carries its version (so it can be cached for a year): it is
// imported from the URL the page sends, not from a fixed path.
let call = null;
let checkAnswer = null; // widgets.browser.check, for the exercises (see answerCheck)

async function fetchOk(url, kind) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return kind === "text" ? response.text() : response.arrayBuffer();
}

// The next chapter of a visit boots from a memory snapshot of the interpreter that the
// first chapter left in the browser's Cache Storage (Pyodide's `_makeSnapshot` /
// `_loadSnapshot`): the snapshot holds CPython already started with the widget modules
// imported, so a boot skips most of Pyodide's start (~2 s → ~0.5 s). It is local only
// (~31 MB, never downloaded), keyed by the Pyodide folder and the wheel's URL (both carry
// a version or hash), replaced when either changes, and any failure falls back to a
// normal boot. The file system is not in the snapshot: the wheel is unpacked again.
const SNAPSHOTS = "dtbook-pyodide-snapshots";
const SAVE_AFTER_MS = 1500; // after the first renders, while the reader reads

function snapshotKey(message) {
  return new URL(`snapshot?wheel=${encodeURIComponent(new URL(message.wheel).pathname)}`, message.indexURL).href;
}

async function readSnapshot(key) {
  try {
    const response = await (await caches.open(SNAPSHOTS)).match(key);
    return response ? new Uint8Array(await response.arrayBuffer()) : null;
  } catch {
    return null; // no Cache Storage (plain http from another host, an opaque origin): boot normally
  }
}

async function saveSnapshot(pyodide, key) {
  try {
    const cache = await caches.open(SNAPSHOTS);
    for (const old of await cache.keys()) if (old.url !== key) await cache.delete(old);
    if (await cache.match(key)) return;
    const bytes = pyodide.makeMemorySnapshot();
    await cache.put(key, new Response(bytes, { headers: { "Content-Type": "application/octet-stream" } }));
  } catch {
    // A full disk or a private window: the next chapter boots normally.
  }
}

async function boot(message) {
  // The wheel and the strings download while Pyodide starts, not after it (issue 5:
  // the first live widget should cost little more than Pyodide's own start).
  const wheel = fetchOk(message.wheel, "bytes");
  const strings = fetchOk(message.strings, "text");
  wheel.catch(() => {}); // handled below; no "unhandled rejection" while Pyodide loads
  strings.catch(() => {});
  const key = snapshotKey(message);
  const saved = readSnapshot(key);
  const { loadPyodide } = await import(new URL("pyodide.mjs", message.indexURL).href);
  const options = { indexURL: message.indexURL, stdout: () => {}, stderr: () => {} };
  const snapshot = await saved;
  let pyodide = null;
  if (snapshot) {
    try {
      pyodide = await loadPyodide({ ...options, _loadSnapshot: snapshot });
    } catch {
      // a snapshot this Pyodide cannot use: forget it, boot normally
      caches.open(SNAPSHOTS).then((cache) => cache.delete(key)).catch(() => {});
    }
  }
  const booted = pyodide ? "snapshot" : "fresh";
  if (!pyodide) pyodide = await loadPyodide({ ...options, _makeSnapshot: true });
  // The wheel is pure Python with no dependencies: unpacking it into site-packages is
  // all that installing it means, without loadPackage's second fetch.
  const sitePackages = pyodide.runPython("import sys; next(p for p in sys.path if p.endswith('site-packages'))");
  pyodide.unpackArchive(await wheel, "wheel", { extractDir: sitePackages });
  const browser = pyodide.pyimport("widgets.browser");
  browser.set_strings(message.lang, await strings);
  call = browser.call;
  checkAnswer = browser.check;
  if (booted === "fresh") setTimeout(() => saveSnapshot(pyodide, key), SAVE_AFTER_MS);
  return booted; // "fresh" or "snapshot": reported with "ready" (tests, bench)
}

// Exercises: Python reads the typed number and compares it with calc's answer; the reply
// is {status, html} (widgets.exercise.handle), matched to the request by id.
function answerCheck(message) {
  try {
    const request = { spec: message.spec, unit: message.unit, tolerance: message.tolerance, typed: message.typed, lang: message.lang };
    self.postMessage({ type: "checked", id: message.id, ...JSON.parse(checkAnswer(JSON.stringify(request))) });
  } catch (error) {
    self.postMessage({ type: "checked", id: message.id, fatal: String(error && error.message ? error.message : error) });
  }
}

self.onmessage = async (event) => {
  const message = event.data;
  if (message.type === "boot") {
    try {
      const booted = await boot(message);
      self.postMessage({ type: "ready", booted });
    } catch (error) {
      self.postMessage({ type: "fatal", error: String(error && error.message ? error.message : error) });
    }
    return;
  }
  if (message.type === "check") {
    answerCheck(message);
    return;
  }
  if (message.type === "render") {
    try {
      const reply = JSON.parse(call(JSON.stringify({ widget: message.widget, state: message.state, lang: message.lang })));
      self.postMessage({ type: "result", id: message.id, ...reply });
    } catch (error) {
      self.postMessage({ type: "result", id: message.id, fatal: String(error && error.message ? error.message : error) });
    }
  }
};
