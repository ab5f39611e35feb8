// Building the page without ever parsing a string as HTML: every element is made with
// createElement and every piece of text goes in as a text node. No script of this UI sets an
// element's markup from a string, so text from agents, people or the server cannot become
// markup (tests/webui/test_webui_assets.py keeps it so).

/** An element: h("button", {class: "primary", testid: "send", onClick: fn}, "Send"). */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) {
      if (typeof value !== "function") throw new TypeError(`${key} must be a function`);
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "class") el.className = value;
    else if (key === "testid") el.dataset.testid = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "text") el.textContent = value;
    else if (key === "value" || key === "checked" || key === "selected") el[key] = value;
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

/** Append children (nodes, strings as text, nested arrays; null and false skipped). */
export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export function replace(el, ...children) {
  return append(clear(el), children);
}

/** "14:03" for today, "3 Jan 14:03" otherwise; the full time as the element's title. */
export function timeEl(iso) {
  if (!iso) return null;
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return null;
  const today = new Date().toDateString() === at.toDateString();
  const opts = today ? { hour: "2-digit", minute: "2-digit" } : { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" };
  return h("time", { datetime: iso, title: at.toLocaleString() }, at.toLocaleString(undefined, opts));
}

export function formatTokens(usage) {
  if (!usage) return "";
  const total = (usage.inputTokens || 0) + (usage.outputTokens || 0);
  return total >= 10000 ? `${(total / 1000).toFixed(1)}k tok` : `${total} tok`;
}

/** What calls cost as the CLI shows it: "$1.25", "$0.0035" (two to four decimals),
 * "<$0.0001"; "+?" when some calls had no price, "cost ?" when none had; "" when the
 * document carries no cost. */
export function formatCost(usage) {
  if (!usage || !("costUsd" in usage)) return "";
  const cost = usage.costUsd;
  if (cost === null) return "cost ?";
  let shown;
  if (cost >= 1) shown = `$${cost.toFixed(2)}`;
  else if (cost > 0 && cost < 0.00005) shown = "<$0.0001";
  else {
    const [whole, decimals = ""] = cost.toFixed(4).replace(/0+$/, "").split(".");
    shown = `$${whole}.${decimals.padEnd(2, "0")}`;
  }
  return usage.unpricedCalls ? `${shown}+?` : shown;
}

let toastRoot = null;

/** A short notice under the top bar, covering nothing; errors stay longer. */
export function toast(text, { error = false, ms } = {}) {
  toastRoot ??= document.querySelector("[data-testid=toasts]");
  const el = h("div", { class: error ? "toast error" : "toast", role: error ? "alert" : "status", testid: "toast" }, text);
  toastRoot.append(el);
  setTimeout(() => el.remove(), ms ?? (error ? 8000 : 4000));
}

/** A modal dialog appended to the body; resolved with what `build(close)` decides. */
export function modal(build, { testid, label, className } = {}) {
  return new Promise((resolve) => {
    const dialog = h("dialog", { testid, "aria-label": label, class: className });
    let done = false;
    const close = (value) => {
      if (done) return;
      done = true;
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    dialog.addEventListener("cancel", (e) => { e.preventDefault(); close(undefined); });
    append(dialog, build(close));
    document.body.append(dialog);
    dialog.showModal();
    const first = dialog.querySelector("[autofocus]") || dialog.querySelector("input, select, textarea, button");
    first?.focus();
  });
}

/** Ask a yes/no question in a dialog. */
export function confirmDialog(question, { action = "Delete", danger = true } = {}) {
  return modal((close) => [
    h("p", {}, question),
    h("div", { class: "actions" },
      h("button", { type: "button", testid: "confirm-cancel", onClick: () => close(false) }, "Cancel"),
      h("button", { type: "button", class: danger ? "danger" : "primary", testid: "confirm-ok", onClick: () => close(true) }, action)),
  ], { testid: "confirm-dialog", label: question });
}
