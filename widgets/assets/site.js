// Accessibility fixes to markup the theme creates at run time (every page): a table that
// scrolls sideways must be reachable by keyboard (axe: scrollable-region-focusable).
function focusableScrollers() {
  for (const el of document.querySelectorAll(".md-typeset__scrollwrap:not([tabindex])")) el.tabIndex = 0;
}
focusableScrollers();
document.addEventListener("DOMContentLoaded", focusableScrollers);
window.addEventListener("load", focusableScrollers);
