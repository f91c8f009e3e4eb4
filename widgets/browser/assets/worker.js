// The module Worker: boots Pyodide from the site itself, installs the project wheel and
// the page language's strings, then answers {id, widget, state, lang} with Python's HTML.
// Replies carry the request id so the page can match them (Pyodide's webworker pattern).
// The Pyodide folder carries its version (so it can be cached for a year): it is
// imported from the URL the page sends, not from a fixed path.
let call = null;
let checkAnswer = null; // widgets.browser.check, for the exercises (see answerCheck)

// ---- Downloads: progress, and the real reason a file fails --------------------------------
// Pyodide fetches its own files (the wasm, the standard library, the lock file) and, when
// WebAssembly cannot start, logs a warning and never settles. So every fetch of this
// worker goes through `watchedFetch`: it reports the bytes of the runtime's files as they
// arrive (the page times out only when nothing arrives for a while, so a slow link still
// goes live), and it turns an HTTP error, a .wasm served with the wrong type, or a lost
// connection into a reason the page shows at once: {key, file, status?, type?}.
const nativeFetch = self.fetch.bind(self);
let expected = {}; // file name -> its size in bytes (from the page's settings)
let total = 0; // their sum
const received = new Map(); // file name -> bytes so far
let lastReport = 0;
let failed = false;

class BootFailure extends Error {
  constructor(reason) {
    super(`${reason.key}: ${reason.file || ""}`);
    this.reason = reason;
  }
}

function fail(reason) {
  if (!failed) self.postMessage({ type: "fatal", reason });
  failed = true;
  return new BootFailure(reason);
}

const errorText = (error) => String(error && error.message ? error.message : error);
const fileName = (url) => new URL(url, self.location.href).pathname.split("/").pop();

function reportProgress(force = false) {
  const now = performance.now();
  if (!force && now - lastReport < 200) return;
  lastReport = now;
  let loaded = 0;
  for (const bytes of received.values()) loaded += bytes;
  self.postMessage({ type: "progress", loaded, total });
}

async function countBytes(name, response) {
  if (!(name in expected) || !response.body) return;
  const reader = response.body.getReader();
  received.set(name, 0);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      received.set(name, received.get(name) + value.byteLength);
      reportProgress();
    }
    reportProgress(true);
  } catch {
    // the download itself failed: the branch Pyodide reads reports it
  }
}

async function watchedFetch(input, init) {
  const url = typeof input === "string" || input instanceof URL ? String(input) : input.url;
  const name = fileName(url);
  let response;
  try {
    response = await nativeFetch(input, init);
    // An error may come from the browser's cache (a host that marked a folder immutable
    // also on its 404, a deploy that was incomplete a minute ago): ask the server once more.
    if (!response.ok) response = await nativeFetch(input, { ...init, cache: "reload" });
  } catch (error) {
    throw fail({ key: "network", file: name });
  }
  if (!response.ok) throw fail({ key: "http", file: name, status: String(response.status) });
  const type = (response.headers.get("Content-Type") || "").split(";")[0].trim();
  if (name.endsWith(".wasm") && type !== "application/wasm") throw fail({ key: "mime", file: name, type: type || "?" });
  countBytes(name, response.clone());
  return response;
}
self.fetch = watchedFetch;

// A .wasm that arrives but cannot be compiled (truncated, corrupted): Pyodide would only
// log it; report it.
for (const method of ["instantiateStreaming", "instantiate", "compileStreaming", "compile"]) {
  const original = WebAssembly[method];
  if (typeof original !== "function") continue;
  WebAssembly[method] = function (...args) {
    return original.apply(this, args).catch((error) => {
      throw fail({ key: "corrupt", file: "pyodide.asm.wasm", detail: errorText(error) });
    });
  };
}

async function fetchOk(url, kind) {
  const response = await watchedFetch(url);
  return kind === "text" ? response.text() : response.arrayBuffer();
}

// The next chapter of a visit boots from a memory snapshot of the interpreter that the
// first chapter left in the browser's Cache Storage (Pyodide's `_makeSnapshot` /
// `_loadSnapshot`): the snapshot holds CPython already started with the widget modules
// imported, so a boot skips most of Pyodide's start (~2 s → ~0.5 s). It is local only
// (~31 MB, never downloaded), keyed by the Pyodide folder, the wheel's and the standard library's URLs (all carry
// a version or hash), replaced when either changes, and any failure falls back to a
// normal boot. The file system is not in the snapshot: the wheel is unpacked again.
const SNAPSHOTS = "dtbook-pyodide-snapshots";
const SAVE_AFTER_MS = 1500; // after the first renders, while the reader reads

function snapshotKey(message) {
  const wheel = encodeURIComponent(new URL(message.wheel).pathname);
  const stdlib = encodeURIComponent(new URL(message.stdlib).pathname);
  return new URL(`snapshot?wheel=${wheel}&stdlib=${stdlib}`, message.indexURL).href;
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
  expected = message.files || {};
  total = Object.values(expected).reduce((sum, size) => sum + size, 0);
  // The wheel and the strings download while Pyodide starts, not after it: the first
  // live widget should cost little more than Pyodide's own start.
  const wheel = fetchOk(message.wheel, "bytes");
  const strings = fetchOk(message.strings, "text");
  wheel.catch(() => {}); // handled below; no "unhandled rejection" while Pyodide loads
  strings.catch(() => {});
  const key = snapshotKey(message);
  const saved = readSnapshot(key);
  const { loadPyodide } = await import(new URL("pyodide.mjs", message.indexURL).href);
  // The standard library trimmed at build time to the modules the widgets import.
  const options = { indexURL: message.indexURL, stdLibURL: message.stdlib, stdout: () => {}, stderr: () => {} };
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
    self.postMessage({ type: "checked", id: message.id, fatal: errorText(error) });
  }
}

self.onmessage = async (event) => {
  const message = event.data;
  if (message.type === "boot") {
    try {
      const booted = await boot(message);
      self.postMessage({ type: "ready", booted });
    } catch (error) {
      if (!(error instanceof BootFailure)) fail({ key: "other", detail: errorText(error) });
    }
    return;
  }
  if (message.type === "check") {
    answerCheck(message);
    return;
  }
  if (message.type === "render") {
    try {
      const reply = JSON.parse(call(JSON.stringify({ widget: message.widget, state: message.state, lang: message.lang, link: message.link === true })));
      self.postMessage({ type: "result", id: message.id, ...reply });
    } catch (error) {
      self.postMessage({ type: "result", id: message.id, fatal: errorText(error) });
    }
  }
};
