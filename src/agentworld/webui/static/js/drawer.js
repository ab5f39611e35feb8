// The chat list as a drawer on narrow screens: ☰ opens it; its own close button, Esc and a
// tap outside it close it (that tap presses nothing else), and the close button and Esc put
// the focus back on ☰ so the person is never stranded.

import { h } from "./dom.js";

const sidebar = () => document.querySelector(".sidebar");

/** Close the drawer (if open); `refocus` puts the focus back on the ☰ button. */
export function closeDrawer(menu, { refocus = false } = {}) {
  const el = sidebar();
  const wasOpen = el?.classList.contains("open") ?? false;
  el?.classList.remove("open");
  menu.setAttribute("aria-expanded", "false");
  if (wasOpen && refocus) menu.focus();
}

function openDrawer(menu) {
  const el = sidebar();
  if (!el) return;
  if (!el.querySelector(".drawer-close")) {
    el.prepend(h("button", { type: "button", class: "icon-btn drawer-close", testid: "drawer-close", "aria-label": "Close the chat list",
      onClick: () => closeDrawer(menu, { refocus: true }) }, "✕ Close"));
  }
  el.classList.add("open");
  menu.setAttribute("aria-expanded", "true");
  el.querySelector("button:not(.drawer-close), input, a")?.focus();
}

/** Wire the ☰ button, Esc and taps outside the open drawer. */
export function installDrawer(menu) {
  menu.addEventListener("click", () => {
    if (sidebar()?.classList.contains("open")) closeDrawer(menu, { refocus: true });
    else openDrawer(menu);
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !e.defaultPrevented && sidebar()?.classList.contains("open")) {
      e.preventDefault();
      closeDrawer(menu, { refocus: true });
    }
  });
  // A tap outside only closes the drawer: the click it makes is swallowed, so it never presses
  // what happened to be under it (an approval's button, Send, Stop).
  let swallowUntil = 0;
  document.addEventListener("pointerdown", (e) => {
    const el = sidebar();
    if (!el?.classList.contains("open") || el.contains(e.target) || menu.contains(e.target)) return;
    e.preventDefault();
    swallowUntil = performance.now() + 1000;
    closeDrawer(menu);
  }, true);
  document.addEventListener("click", (e) => {
    if (performance.now() > swallowUntil) return;
    swallowUntil = 0;
    e.preventDefault();
    e.stopPropagation();
  }, true);
}
