// The page side of the live widgets: a thin bridge, no numbers and no strings of its own.
// It reads control values, posts {id, widget, state, lang} to one module Worker per page,
// and swaps in the HTML that Python returns. Settings come from the JSON block that the
// MkDocs plugin writes (#widgets-config); the DOM contract is in DESIGN.md.

const config = JSON.parse(document.getElementById("widgets-config").textContent);
const roots = Array.from(document.querySelectorAll("[data-widget]"));
const byName = new Map(roots.map((root) => [root.dataset.widget, root]));
const inflight = new Map(); // widget name -> {id, state}
const queued = new Map(); // widget name -> latest state not yet sent
const latest = new Map(); // widget name -> JSON of the last state requested
const fromUrl = new Set(); // widgets whose request came from the URL fragment
const pendingLabels = new Map(); // widget name -> the <output> labels showing "loading"
let worker = null;
let booting = null;
let ready = false;
let nextId = 1;

const region = (root, name) => root.querySelector(`[data-region="${name}"]`);

function setStatus(root, status, message = "") {
  root.dataset.status = status;
  const line = region(root, "status");
  if (line) line.textContent = message;
}

// The controls are pre-rendered disabled, so that without JavaScript the page does not
// offer sliders that change nothing (a <noscript> note says why); this runtime enables
// them, except those that do nothing in the current state (`data-inactive`, from Python).
function setControlsDisabled(root, disabled) {
  for (const el of root.querySelectorAll("input[name], select[name]")) {
    el.disabled = disabled || el.hasAttribute("data-inactive");
  }
}

// Python says which controls do nothing in this state (the pipeline's v outside
// interleaving) and where a slider ends (the ring's last step): {inactive, limits}.
function applyControlRules(root, inactive, limits) {
  for (const el of root.querySelectorAll("input[name], select[name]")) {
    const off = inactive.includes(el.name);
    el.toggleAttribute("data-inactive", off);
    el.disabled = off;
    const row = el.closest(".w-control");
    if (row) row.toggleAttribute("data-inactive", off);
    if (el.type === "range" && el.name in limits) el.max = String(limits[el.name]);
  }
}

// Only what a reader can change goes into the URL: not the controls that do nothing.
function withoutInactive(state, inactive) {
  return Object.fromEntries(Object.entries(state).filter(([key]) => !inactive.includes(key)));
}

function defaultState(root) {
  return Object.fromEntries(new URLSearchParams(root.dataset.defaults));
}

// The state of a widget as the strings its controls hold (checkbox: 1 or 0).
function readState(root) {
  const state = {};
  for (const el of root.querySelectorAll("input[name], select[name]")) {
    if (el.type === "radio") {
      if (el.checked) state[el.name] = el.value;
    } else if (el.type === "checkbox") {
      state[el.name] = el.checked ? "1" : "0";
    } else {
      state[el.name] = el.value;
    }
  }
  return state;
}

function writeState(root, state) {
  for (const [name, value] of Object.entries(state)) {
    for (const el of root.querySelectorAll(`[name="${CSS.escape(name)}"]`)) {
      if (el.type === "radio") el.checked = el.value === value;
      else if (el.type === "checkbox") el.checked = value === "1";
      else el.value = value;
    }
  }
}

// URL fragment: `#why.tokens=1000000000000&why.model=llama2-13b`. A plain anchor
// (no "=") is left alone.
function parseHash() {
  const states = new Map();
  const text = location.hash.slice(1);
  if (!text.includes("=")) return states;
  for (const part of text.split("&")) {
    const eq = part.indexOf("=");
    const dot = part.indexOf(".");
    if (eq < 0 || dot < 0 || dot > eq) continue;
    let key, value;
    try {
      key = decodeURIComponent(part.slice(0, eq));
      value = decodeURIComponent(part.slice(eq + 1));
    } catch {
      continue;
    }
    const widget = key.slice(0, key.indexOf("."));
    if (!byName.has(widget)) continue;
    if (!states.has(widget)) states.set(widget, {});
    states.get(widget)[key.slice(widget.length + 1)] = value;
  }
  return states;
}

// The URL (and the language switcher's links) follow the widget states, but off the
// update path: history.replaceState costs a few milliseconds and Chromium drops calls
// beyond ~200 per 10 s, so a drag writes the URL once it pauses (HASH_DELAY_MS after the
// last applied update), and at once before the reader leaves or switches language.
const HASH_DELAY_MS = 150;
const urlStates = new Map(); // widget name -> its last applied valid state
let hashTimer = 0;
let hashWhenScheduled = ""; // location.hash when the pending write was scheduled

function urlFragment() {
  const keep = location.hash.slice(1).includes("=")
    ? location.hash.slice(1).split("&").filter((p) => p && !Array.from(urlStates.keys()).some((n) => p.startsWith(`${n}.`)))
    : [];
  for (const [name, state] of urlStates) {
    const defaults = defaultState(byName.get(name));
    for (const [key, value] of Object.entries(state)) {
      if (defaults[key] !== value) keep.push(`${name}.${key}=${encodeURIComponent(value)}`);
    }
  }
  return keep.length ? `#${keep.join("&")}` : "";
}

// Cancel the pending write, if any; returns whether one was pending.
function cancelHashWrite() {
  const pending = hashTimer !== 0;
  clearTimeout(hashTimer);
  hashTimer = 0;
  return pending;
}

// Write the URL now if a write is pending (the timer, a language link, leaving the page).
function flushHash() {
  if (!cancelHashWrite()) return;
  // A link the reader followed since this write was scheduled wins: its hashchange may
  // not have been handled yet, and writing now would replace it with the older state.
  if (location.hash !== hashWhenScheduled) return;
  const fragment = urlFragment();
  // The history entry keeps the states too, so that Back after a preset link (a new entry)
  // brings the figure back to what this entry showed (see popstate below).
  const entry = { ...(history.state || {}), dtbookWidgets: Object.fromEntries(urlStates) };
  history.replaceState(entry, "", fragment !== location.hash ? fragment || location.pathname + location.search : location.href);
  // The language switcher keeps the reader on the same widget state.
  for (const link of document.querySelectorAll("a[hreflang]")) {
    link.href = link.href.split("#")[0] + fragment;
  }
}

function writeHash(name, state) {
  urlStates.set(name, state);
  cancelHashWrite();
  hashWhenScheduled = location.hash;
  hashTimer = setTimeout(flushHash, HASH_DELAY_MS);
}

function send(name, state) {
  latest.set(name, JSON.stringify(state));
  if (inflight.has(name)) {
    queued.set(name, state); // only the newest state matters: coalesce while busy
    return;
  }
  const id = nextId++;
  inflight.set(name, { id, state });
  // A state from the URL is read leniently: Python keeps what is valid and lists the rest.
  worker.postMessage({ type: "render", id, widget: name, state, lang: config.lang, link: fromUrl.has(name) });
}

function apply(reply) {
  const entry = Array.from(inflight.entries()).find(([, v]) => v.id === reply.id);
  if (!entry) return;
  const [name] = entry;
  inflight.delete(name);
  const root = byName.get(name);
  if (queued.has(name)) {
    // The controls moved on while this state was computed: showing it would take the
    // figure back to a state the reader has left. Only the newest request is applied.
    const next = queued.get(name);
    queued.delete(name);
    send(name, next);
    return;
  }
  if (reply.fatal) {
    setStatus(root, "error", config.strings.error.replace("{reason}", reply.fatal));
  } else if (!reply.ok) {
    // A value Python refuses (a typed size it cannot read): the figure keeps showing the
    // last valid state, and the message says what to fix.
    region(root, "problem").innerHTML = reply.html;
    root.dataset.revision = String(Number(root.dataset.revision) + 1);
  } else {
    const first = Number(root.dataset.revision) === 0;
    region(root, "output").innerHTML = reply.html;
    region(root, "problem").innerHTML = reply.problems; // what a link asked for that was left out
    // The rules first: a slider clamps a value beyond its current max.
    applyControlRules(root, reply.inactive, reply.limits);
    if (fromUrl.delete(name)) writeState(root, reply.state);
    for (const [control, text] of Object.entries(reply.labels)) {
      const out = root.querySelector(`output[data-label="${CSS.escape(control)}"]`);
      if (out) out.textContent = text;
    }
    pendingLabels.delete(name);
    delete root.dataset.pending;
    writeHash(name, withoutInactive(reply.state, reply.inactive));
    // A screen reader hears the sentence that states the result, not the whole figure;
    // not at the first render, which only repeats what the page already says.
    const sentence = region(root, "output").querySelector(".w-sentence");
    if (!first) region(root, "live").textContent = sentence ? sentence.textContent : "";
    root.dataset.revision = String(Number(root.dataset.revision) + 1);
  }
}

// Why the runtime could not start, in the page language: {key, file, status, type,
// detail} from the worker (worker.js), or {key: "timeout"} when nothing arrived for a
// while. The templates are the catalog's `runtime.reasons.*`.
function reasonText(reason) {
  const template = config.strings.reasons[reason.key] || config.strings.reasons.other;
  return template.replace(/\{(\w+)\}/g, (whole, name) => (name in reason ? String(reason[name]) : whole));
}

function failAll(text) {
  for (const root of roots) {
    setStatus(root, "error", config.strings.error.replace("{reason}", text));
    setControlsDisabled(root, true); // nothing would answer them: the figure stays as rendered
    if (root.dataset.pending) {
      // Controls moved while loading go back to what the pre-rendered figure shows.
      root.querySelector("form.w-controls").reset();
      for (const out of pendingLabels.get(root.dataset.widget) || []) out.textContent = out.dataset.was;
      pendingLabels.delete(root.dataset.widget);
      delete root.dataset.pending;
    }
  }
}

// The loading line shows how much of the runtime has arrived, in steps of 10% (each step
// is one announcement for a screen reader, not one per packet).
function showProgress(loaded, total) {
  if (!total) return;
  const step = Math.min(10, Math.floor((10 * loaded) / total));
  if (step === shownStep) return;
  shownStep = step;
  const percent = progressPercent();
  const text = config.strings.progress.replace("{percent}", percent);
  for (const root of roots) if (root.dataset.status === "loading") setStatus(root, "loading", text);
  const chip = config.strings.pending.replace("{percent}", percent);
  for (const labels of pendingLabels.values()) for (const out of labels) out.textContent = chip;
}
let shownStep = -1;

// The progress shown so far, in the page language ("" before any byte has been counted).
function progressPercent() {
  return shownStep < 0 ? "" : new Intl.NumberFormat(config.lang, { style: "percent" }).format(shownStep / 10);
}

function boot() {
  if (booting) return booting;
  for (const root of roots) setStatus(root, "loading", config.strings.loading);
  booting = new Promise((resolve, reject) => {
    // A slow download that keeps arriving is not a failure: the boot fails only when no
    // byte and no reply came for `stallTimeoutMs` (the page never gives up on progress).
    let timer = 0;
    let settled = false;
    const watch = () => {
      clearTimeout(timer);
      if (!settled) timer = setTimeout(() => reject({ key: "timeout" }), config.stallTimeoutMs);
    };
    watch();
    worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    worker.onmessage = (event) => {
      const message = event.data;
      if (message.type === "progress") {
        watch();
        showProgress(message.loaded, message.total);
      } else if (message.type === "ready") {
        settled = true;
        clearTimeout(timer);
        // How Python started: "fresh" or "snapshot" (worker.js; read by tests and bench).
        document.documentElement.dataset.pyodideBoot = message.booted;
        resolve();
      } else if (message.type === "fatal") {
        settled = true;
        clearTimeout(timer);
        reject(message.reason);
      } else if (message.type === "result") {
        apply(message);
      } else if (message.type === "checked") {
        onChecked(message);
      }
    };
    worker.onerror = (event) => {
      clearTimeout(timer);
      reject({ key: "other", detail: event.message || "worker" });
    };
    worker.postMessage({
      type: "boot",
      indexURL: new URL(config.pyodide, document.baseURI).href,
      wheel: new URL(config.wheel, document.baseURI).href,
      stdlib: new URL(config.stdlib, document.baseURI).href,
      strings: new URL(`../i18n/${config.lang}.json`, import.meta.url).href,
      files: config.files,
      lang: config.lang,
    });
  }).catch((reason) => {
    throw new Error(reasonText(reason));
  });
  booting.then(
    () => {
      ready = true;
      const hashStates = parseHash();
      for (const root of roots) {
        const name = root.dataset.widget;
        setStatus(root, "ready");
        // Re-render what the controls hold now (the browser may have restored a form, or
        // the reader moved one while Python loaded), or else the state a shared link carries.
        const useLink = hashStates.has(name) && !root.dataset.pending;
        if (useLink) fromUrl.add(name);
        send(name, useLink ? hashStates.get(name) : readState(root));
      }
    },
    (error) => {
      if (worker) worker.terminate();
      failAll(error.message);
    },
  );
  return booting;
}

// A control moved before Python is there: its label says so where the reader is looking
// (not the old value beside the new thumb), the figure is marked as not yet updated, and
// the boot then renders what the controls hold (so the newest value is the one applied).
function markPending(root, control) {
  const name = root.dataset.widget;
  const out = control && control.name ? root.querySelector(`output[data-label="${CSS.escape(control.name)}"]`) : null;
  root.dataset.pending = "1";
  if (!out) return;
  if (!pendingLabels.has(name)) pendingLabels.set(name, new Set());
  if (!pendingLabels.get(name).has(out)) out.dataset.was = out.textContent;
  pendingLabels.get(name).add(out);
  out.textContent = config.strings.pending.replace("{percent}", progressPercent()).trim();
}

function onInput(event) {
  const root = event.target.closest("[data-widget]");
  if (!root) return;
  boot();
  if (root.dataset.status !== "ready") {
    if (root.dataset.status === "loading") markPending(root, event.target);
    return; // the boot sends the current state itself
  }
  const state = readState(root);
  const name = root.dataset.widget;
  if (latest.get(name) === JSON.stringify(state)) return; // input and change both fire
  send(name, state);
}

// Where the reader is, for the page in the other language: the widget nearest the top of
// the view and how far down the view it sits (sessionStorage of this tab only).
const RETURN_KEY = "dtbook-return";
function rememberPlace(link) {
  let best = null;
  for (const root of roots) {
    const top = root.getBoundingClientRect().top;
    if (top < innerHeight && (best === null || Math.abs(top) < Math.abs(best.top))) best = { name: root.dataset.widget, top };
  }
  try {
    if (best) sessionStorage.setItem(RETURN_KEY, JSON.stringify({ path: new URL(link.href).pathname, widget: best.name, top: best.top }));
  } catch {
    // storage refused (private mode): the other page opens at the widget the URL names
  }
}

for (const kind of ["pointerdown", "keydown"]) {
  document.addEventListener(kind, (event) => {
    const link = event.target instanceof Element ? event.target.closest("a[href]") : null;
    if (!link) return;
    if (link.matches("a[hreflang]")) rememberPlace(link);
    // a language link, or a preset (a new history entry): the entry left keeps its state
    if (link.matches("a[hreflang]") || link.getAttribute("href").startsWith("#")) flushHash();
  }, true);
}
window.addEventListener("pagehide", flushHash);
document.addEventListener("visibilitychange", flushHash);

// Back and Forward: an entry this page wrote carries its widget states (flushHash); a
// widget it does not list shows the URL's state or its defaults (a preset link made a new
// entry, and Back returns to the figure as it was before the preset).
let poppedHash = null;
window.addEventListener("popstate", (event) => {
  const saved = event.state && event.state.dtbookWidgets;
  if (!saved || !ready) return;
  cancelHashWrite();
  poppedHash = location.hash; // the hashchange that follows is this same navigation
  const hashStates = parseHash();
  for (const root of roots) {
    const name = root.dataset.widget;
    const state = saved[name] || hashStates.get(name) || defaultState(root);
    urlStates.delete(name);
    fromUrl.add(name);
    latest.delete(name);
    send(name, state);
  }
});

// A link to a widget state (e.g. a preset: href="#parallel3d.dp=16&...") applies it.
window.addEventListener("hashchange", () => {
  if (poppedHash !== null && poppedHash === location.hash) {
    poppedHash = null;
    return;
  }
  poppedHash = null;
  const states = parseHash();
  if (states.size === 0) return;
  cancelHashWrite(); // the new URL wins over a pending write; the update re-schedules it
  if (!ready) {
    boot(); // the boot applies the fragment itself
    return;
  }
  for (const [name, state] of states) {
    fromUrl.add(name);
    latest.delete(name);
    send(name, state);
  }
});

for (const root of roots) {
  setControlsDisabled(root, false);
  root.addEventListener("input", onInput);
  root.addEventListener("change", onInput);
  root.addEventListener("submit", (event) => event.preventDefault());
  for (const kind of ["pointerdown", "focusin", "keydown"]) root.addEventListener(kind, () => boot(), { once: true });
}

// Open at the widget the reader was on in the other language, or at the first widget a
// shared link names; not on a reload or Back, where the browser restores the scroll.
function scrollToWidget() {
  const navigation = performance.getEntriesByType("navigation")[0];
  if (navigation && navigation.type !== "navigate") return;
  let place = null;
  try {
    place = JSON.parse(sessionStorage.getItem(RETURN_KEY) || "null");
    sessionStorage.removeItem(RETURN_KEY);
  } catch {
    place = null;
  }
  const states = parseHash();
  if (place && place.path === location.pathname && byName.has(place.widget)) {
    const root = byName.get(place.widget);
    window.scrollBy(0, root.getBoundingClientRect().top - Math.max(0, Math.min(place.top, innerHeight / 2)));
    return;
  }
  const named = roots.find((root) => states.has(root.dataset.widget));
  if (!named) return;
  const header = document.querySelector(".md-header");
  const below = header ? header.getBoundingClientRect().bottom : 0; // the sticky header
  window.scrollTo(0, scrollY + named.getBoundingClientRect().top - below - 8);
}
scrollToWidget();
if (!(history.state && history.state.dtbookWidgets)) {
  history.replaceState({ ...(history.state || {}), dtbookWidgets: {} }, "", location.href);
}

// Boot when a widget comes into view, or at once when the URL carries a widget state.
if (parseHash().size > 0) {
  boot();
} else if ("IntersectionObserver" in window) {
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) {
      observer.disconnect();
      boot();
    }
  }, { rootMargin: "200px" });
  for (const root of roots) observer.observe(root);
} else {
  boot();
}

// ---- Exercises (form.w-exercise) ---------------------------------------------------------
// A form is pre-rendered `hidden`: without JavaScript the page shows the question and its
// collapsible solution only. Here it is unhidden; focusing the field starts the boot, and
// Check posts {type: "check", id, spec, unit, tolerance, typed, lang} to the worker. The
// reply {status, html} is Python's verdict and message (widgets/framework/exercise.py): this file
// neither reads nor compares numbers. `data-status`: static → idle → checking →
// correct | incorrect | invalid | error; `data-revision` grows with every verdict shown.
const exercises = Array.from(document.querySelectorAll("form.w-exercise"));
const checks = new Map(); // request id -> form
const newestCheck = new WeakMap(); // form -> id of its newest request

// The worked solution: the first <details> after the form (`??? success` in Markdown).
function exerciseSolution(form) {
  for (let el = form.nextElementSibling; el; el = el.nextElementSibling) {
    if (el.tagName === "DETAILS") return el;
  }
  return null;
}

function openSolution(form) {
  const details = exerciseSolution(form);
  if (!details) return;
  details.open = true;
  const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  details.scrollIntoView({ block: "nearest", behavior: still ? "auto" : "smooth" });
}

function showVerdict(form, status, { html = null, text = "" } = {}) {
  form.dataset.status = status;
  const feedback = form.querySelector('[data-region="feedback"]');
  if (html !== null) feedback.innerHTML = html; // Python's HTML, parameters escaped there
  else feedback.textContent = text;
  form.elements.answer.setAttribute("aria-invalid", String(status === "invalid" || status === "incorrect"));
  form.dataset.revision = String(Number(form.dataset.revision) + 1);
  if (status === "correct") openSolution(form);
}

function checkExercise(form) {
  const id = nextId++;
  const typed = form.elements.answer.value;
  newestCheck.set(form, id);
  form.dataset.status = "checking";
  form.querySelector('[data-region="feedback"]').textContent = config.exercise.checking;
  boot().then(
    () => {
      if (newestCheck.get(form) !== id) return; // a newer check replaced this one
      checks.set(id, form);
      const { spec, unit, tolerance } = form.dataset;
      worker.postMessage({ type: "check", id, spec, unit, tolerance, typed, lang: config.lang });
    },
    (error) => {
      if (newestCheck.get(form) !== id) return;
      showVerdict(form, "error", { text: config.exercise.unavailable.replace("{reason}", error.message) });
    },
  );
}

function onChecked(reply) {
  const form = checks.get(reply.id);
  if (!form) return;
  checks.delete(reply.id);
  if (newestCheck.get(form) !== reply.id) return;
  if (reply.fatal) showVerdict(form, "error", { text: config.exercise.unavailable.replace("{reason}", reply.fatal) });
  else showVerdict(form, reply.status, { html: reply.html });
}

function setupExercise(form) {
  const field = form.elements.answer;
  for (const kind of ["focus", "input"]) field.addEventListener(kind, () => boot(), { once: true });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    checkExercise(form);
  });
  const show = form.querySelector('[data-action="solution"]');
  if (exerciseSolution(form)) show.addEventListener("click", () => openSolution(form));
  else show.hidden = true;
  form.hidden = false;
  form.dataset.status = "idle";
}

for (const form of exercises) setupExercise(form);
