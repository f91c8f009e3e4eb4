// Accessibility fixes to markup the theme creates at run time (every page): a region that
// scrolls sideways (a wide table, formula or code block, mostly on a phone) must be
// reachable by keyboard (axe: scrollable-region-focusable). Only regions that do scroll
// get a tab stop, and lose it again when the window grows wide enough.
const SCROLLERS = ".md-typeset__scrollwrap, .md-typeset .math-display, .md-typeset pre > code";

function focusableScrollers() {
  for (const el of document.querySelectorAll(SCROLLERS)) {
    const scrolls = el.scrollWidth > el.clientWidth + 1;
    if (scrolls && !el.hasAttribute("tabindex")) {
      el.tabIndex = 0;
      el.dataset.scrollFocus = "";
    } else if (!scrolls && "scrollFocus" in el.dataset) {
      el.removeAttribute("tabindex");
      delete el.dataset.scrollFocus;
    }
  }
}
focusableScrollers();
document.addEventListener("DOMContentLoaded", focusableScrollers);
window.addEventListener("load", focusableScrollers);
let resizing = 0;
window.addEventListener("resize", () => {
  cancelAnimationFrame(resizing);
  resizing = requestAnimationFrame(focusableScrollers);
});
