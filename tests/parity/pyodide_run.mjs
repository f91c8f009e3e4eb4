// Parity runner: boot the npm Pyodide in Node, install the project wheel exactly as the
// browser does (a py3-none-any wheel), render each request, print the replies as JSON.
// Usage: node pyodide_run.mjs <wheel> <strings-dir> [stdlib.zip] < requests.json > replies.json
// (with the site's trimmed standard library, so every widget is proven to run on it)
import { readFileSync } from "node:fs";
import { loadPyodide } from "pyodide";

const [wheel, stringsDir, stdLibURL] = process.argv.slice(2);
const requests = JSON.parse(readFileSync(0, "utf8"));
const pyodide = await loadPyodide({ stdout: () => {}, stderr: () => {}, ...(stdLibURL ? { stdLibURL } : {}) });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel");
const browser = pyodide.pyimport("widgets.browser");
for (const lang of new Set(requests.map((r) => r.lang))) {
  browser.set_strings(lang, readFileSync(`${stringsDir}/${lang}.json`, "utf8"));
}
// A request with "typed" is an exercise answer to check; the others render a widget.
const replies = requests.map((request) =>
  JSON.parse(("typed" in request ? browser.check : browser.call)(JSON.stringify(request))));
const version = pyodide.runPython("import sys; sys.version.split()[0]");
// Proof that the run used the trimmed library: a module no widget imports is absent.
const trimmed = pyodide.runPython("import importlib.util; importlib.util.find_spec('email') is None");
process.stdout.write(JSON.stringify({ python: version, trimmed, replies }));
