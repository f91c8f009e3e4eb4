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

async function boot(message) {
  // The wheel and the strings download while Pyodide starts, not after it (issue 5:
  // the first live widget should cost little more than Pyodide's own start).
  const wheel = fetchOk(message.wheel, "bytes");
  const strings = fetchOk(message.strings, "text");
  wheel.catch(() => {}); // handled below; no "unhandled rejection" while Pyodide loads
  strings.catch(() => {});
  const { loadPyodide } = await import(new URL("pyodide.mjs", message.indexURL).href);
  const pyodide = await loadPyodide({ indexURL: message.indexURL, stdout: () => {}, stderr: () => {} });
  // The wheel is pure Python with no dependencies: unpacking it into site-packages is
  // all that installing it means, without loadPackage's second fetch.
  const sitePackages = pyodide.runPython("import sys; next(p for p in sys.path if p.endswith('site-packages'))");
  pyodide.unpackArchive(await wheel, "wheel", { extractDir: sitePackages });
  const browser = pyodide.pyimport("widgets.browser");
  browser.set_strings(message.lang, await strings);
  call = browser.call;
  checkAnswer = browser.check;
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
      await boot(message);
      self.postMessage({ type: "ready" });
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
