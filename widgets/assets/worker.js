// The module Worker: boots Pyodide from the site itself, installs the project wheel and
// the page language's strings, then answers {id, widget, state, lang} with Python's HTML.
// Replies carry the request id so the page can match them (Pyodide's webworker pattern).
// The Pyodide folder carries its version (so it can be cached for a year): it is
// imported from the URL the page sends, not from a fixed path.
let call = null;

async function boot(message) {
  const { loadPyodide } = await import(new URL("pyodide.mjs", message.indexURL).href);
  const pyodide = await loadPyodide({ indexURL: message.indexURL, stdout: () => {}, stderr: () => {} });
  await pyodide.loadPackage(message.wheel, { messageCallback: () => {}, errorCallback: () => {} });
  const response = await fetch(message.strings);
  if (!response.ok) throw new Error(`${message.strings}: HTTP ${response.status}`);
  const strings = await response.text();
  const browser = pyodide.pyimport("widgets.browser");
  browser.set_strings(message.lang, strings);
  call = browser.call;
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
  if (message.type === "render") {
    try {
      const reply = JSON.parse(call(JSON.stringify({ widget: message.widget, state: message.state, lang: message.lang })));
      self.postMessage({ type: "result", id: message.id, ...reply });
    } catch (error) {
      self.postMessage({ type: "result", id: message.id, fatal: String(error && error.message ? error.message : error) });
    }
  }
};
