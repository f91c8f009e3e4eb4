// Which files of the standard library the book's Python needs: boot the npm Pyodide in
// Node the way the site's worker does (a snapshot-ready start, the wheel unpacked into
// site-packages), render every widget in every state of tests' edge and random sets in
// every language, check an exercise answer, take a memory snapshot, then list the
// modules loaded from the standard library. With a standard library given, the same run
// proves that it is enough: an import it lacks fails the run and names the module.
// Usage: node stdlib_trace.mjs <pyodide dir> <wheel> <strings dir> <out.json> [stdlib.zip]
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheel, stringsDir, out, stdlib] = process.argv.slice(2);
// An error inside Pyodide would make Node print its minified source line (1 MB): say only
// what Python said, e.g. "ModuleNotFoundError: No module named 'fractions'".
process.on("uncaughtException", fail);
process.on("unhandledRejection", fail);
function fail(error) {
  process.stderr.write(`${(error && error.message) || error}\n`);
  process.exit(1);
}
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
const options = { indexURL: `${pyodideDir}/`, stdout: () => {}, stderr: () => {}, _makeSnapshot: true };
if (stdlib) options.stdLibURL = stdlib;
const pyodide = await loadPyodide(options);
const sitePackages = pyodide.runPython("import sys; next(p for p in sys.path if p.endswith('site-packages'))");
pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel", { extractDir: sitePackages });
const strings = Object.fromEntries(readdirSync(stringsDir).filter((f) => f.endsWith(".json"))
  .map((f) => [f.slice(0, -5), readFileSync(`${stringsDir}/${f}`, "utf8")]));
pyodide.globals.set("STRINGS", pyodide.toPy(strings));
const result = pyodide.runPython(`
import json, os, sys
import widgets.browser as browser
from widgets import REGISTRY
from widgets.framework.spec import canonical, edge_states, random_states

problems = []
for lang, text in STRINGS.items():
    browser.set_strings(lang, text)
for name in sorted(REGISTRY):
    controls = REGISTRY[name].CONTROLS
    for state in [*edge_states(controls), *random_states(controls, 2, seed=1)]:
        for lang in STRINGS:
            reply = json.loads(browser.call(json.dumps({"widget": name, "state": canonical(controls, state), "lang": lang})))
            if reply.get("fatal"):
                problems.append(f"{name} ({lang}): {reply['fatal']}")
    # Bad input takes the localized-error path (a tampered URL): trace it too.
    first = controls[0].name
    for lang in STRINGS:
        browser.call(json.dumps({"widget": name, "state": {first: "\u00ab1e999\u00bb"}, "lang": lang}))
for lang in STRINGS:
    browser.call(json.dumps({"widget": "no-such-widget", "state": {}, "lang": lang}))
    browser.check(json.dumps({"spec": "why.params", "unit": "", "tolerance": "", "typed": "1", "lang": lang}))
    browser.check(json.dumps({"spec": "", "unit": "", "tolerance": "", "typed": "x", "lang": lang}))
json.dumps(problems)
`);
pyodide.makeMemorySnapshot(); // the worker saves one for the next chapter: trace what it loads too
const files = pyodide.runPython(`
import json, os, sys
root = os.path.dirname(os.__file__)
json.dumps(sorted({os.path.relpath(m.__file__, root) for m in list(sys.modules.values())
                   if isinstance(getattr(m, "__file__", None), str) and m.__file__.startswith(root + "/")}))
`);
writeFileSync(out, JSON.stringify({ files: JSON.parse(files), problems: JSON.parse(result) }));
