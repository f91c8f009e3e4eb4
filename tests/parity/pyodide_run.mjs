// Parity runner: boot the npm Pyodide in Node, install the project wheel exactly as the
// browser does (a py3-none-any wheel), render each request, print the replies as JSON.
// Usage: node pyodide_run.mjs <wheel> <strings-dir> < requests.json > replies.json
import { readFileSync } from "node:fs";
import { loadPyodide } from "pyodide";

const [wheel, stringsDir] = process.argv.slice(2);
const requests = JSON.parse(readFileSync(0, "utf8"));
const pyodide = await loadPyodide({ stdout: () => {}, stderr: () => {} });
pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel");
const browser = pyodide.pyimport("widgets.browser");
for (const lang of new Set(requests.map((r) => r.lang))) {
  browser.set_strings(lang, readFileSync(`${stringsDir}/${lang}.json`, "utf8"));
}
// A request with "typed" is an exercise answer to check; the others render a widget.
const replies = requests.map((request) =>
  JSON.parse(("typed" in request ? browser.check : browser.call)(JSON.stringify(request))));
const version = pyodide.runPython("import sys; sys.version.split()[0]");
process.stdout.write(JSON.stringify({ python: version, replies }));
