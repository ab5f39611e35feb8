// A small Markdown renderer that is safe by construction: it builds DOM nodes itself and puts
// every piece of text in as a text node, so raw HTML in a message (<script>, <img onerror>)
// shows as the characters it is and never becomes an element. Only a whitelist is produced:
// p, br, h3-h6, strong, em, del, code, pre, blockquote, ul, ol, li, hr and a — links only to
// http(s) and mailto URLs, opened in a new tab without a referrer. No images are loaded.

import { h } from "./dom.js";

const MAX_SCAN = 2000; // how far an opening delimiter looks for its closer (keeps it linear)
const MAX_DEPTH = 12;

/** The URL if a link may point there (http, https, mailto), else null. */
export function safeUrl(raw) {
  // Browsers drop control characters and whitespace inside a scheme ("java\tscript:"), so do
  // the same before deciding.
  const cleaned = String(raw).replace(/[\u0000-\u0020\u007f-\u009f]+/g, "");
  if (!cleaned) return null;
  let url;
  try {
    url = new URL(cleaned, window.location.href);
  } catch {
    return null;
  }
  return ["http:", "https:", "mailto:"].includes(url.protocol) ? url.href : null;
}

/** Markdown text → a DocumentFragment of whitelisted elements. */
export function renderMarkdown(source) {
  const fragment = document.createDocumentFragment();
  blocks(String(source ?? "").replace(/\r\n?/g, "\n").split("\n"), fragment, 0);
  return fragment;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;

function blocks(lines, out, depth) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    let m;
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !(lines[i].trim().startsWith(fence) && lines[i].trim().replace(fence[0] === "`" ? /`/g : /~/g, "") === "")) {
        body.push(lines[i]);
        i++;
      }
      i++; // the closing fence (or the end)
      const code = h("code", {}, body.join("\n"));
      if (m[2]) code.className = `language-${m[2]}`;
      out.append(h("pre", {}, code));
    } else if ((m = HEADING.exec(line))) {
      const level = Math.min(6, m[1].length + 2); // h1 in a message is an h3 on the page
      out.append(inline(m[2], h(`h${level}`), depth));
      i++;
    } else if (RULE.test(line)) {
      out.append(h("hr"));
      i++;
    } else if (QUOTE.test(line) && depth < MAX_DEPTH) {
      const inner = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) { inner.push(m[1]); i++; }
      const quote = h("blockquote");
      blocks(inner, quote, depth + 1);
      out.append(quote);
    } else if ((m = ITEM.exec(line)) && depth < MAX_DEPTH) {
      i = list(lines, i, out, depth);
    } else {
      const para = [];
      while (i < lines.length && lines[i].trim() && !startsBlock(lines[i])) { para.push(lines[i]); i++; }
      if (!para.length) { para.push(line); i++; }
      out.append(inline(para.join("\n"), h("p"), depth));
    }
  }
}

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
}

function list(lines, start, out, depth) {
  const first = ITEM.exec(lines[start]);
  const ordered = /\d/.test(first[2]);
  const el = ordered ? h("ol") : h("ul");
  if (ordered && parseInt(first[2], 10) !== 1) el.setAttribute("start", String(parseInt(first[2], 10)));
  let i = start;
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || /\d/.test(m[2]) !== ordered) break;
    const indent = m[1].length + m[2].length + 1;
    const body = [m[3]];
    i++;
    // Continuation: indented lines (a nested list too), and blank lines followed by those.
    while (i < lines.length) {
      const next = lines[i];
      if (next.trim() && /^\s{2,}/.test(next)) { body.push(next.slice(Math.min(indent, next.length - next.trimStart().length))); i++; continue; }
      if (!next.trim() && i + 1 < lines.length && /^\s{2,}\S/.test(lines[i + 1])) { body.push(""); i++; continue; }
      break;
    }
    const item = h("li");
    if (body.length === 1) inline(body[0], item, depth);
    else blocks(body, item, depth + 1);
    el.append(item);
    if (i < lines.length && !lines[i].trim() && i + 1 < lines.length && ITEM.test(lines[i + 1])) i++;
  }
  out.append(el);
  return i;
}

/** Inline Markdown of `text` appended to `out` (returned). */
export function inline(text, out, depth = 0) {
  let buffer = "";
  const flush = () => { if (buffer) { out.append(buffer); buffer = ""; } };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const rest = () => text.slice(i, i + MAX_SCAN);
    if (c === "\\" && i + 1 < text.length && /[\\`*_{}[\]()#+\-.!~>|<]/.test(text[i + 1])) {
      buffer += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "\n") { flush(); out.append(h("br")); i++; continue; }
    if (c === "`") {
      const m = /^(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/.exec(rest());
      if (m) { flush(); out.append(h("code", {}, m[2])); i += m[0].length; continue; }
      const run = /^`+/.exec(rest())[0];
      buffer += run;
      i += run.length;
      continue;
    }
    if (depth < MAX_DEPTH && (c === "*" || c === "_" || c === "~")) {
      const span = emphasis(text, i, depth);
      if (span) { flush(); out.append(span.node); i = span.end; continue; }
    }
    if (c === "!" && text[i + 1] === "[") {
      // Images are not loaded (a tracking pixel, a probe of the local network): shown as links.
      const link = linkAt(text, i + 1, depth, "image: ");
      if (link) { flush(); out.append(link.node); i = link.end; continue; }
    }
    if (c === "[" && depth < MAX_DEPTH) {
      const link = linkAt(text, i, depth, "");
      if (link) { flush(); out.append(link.node); i = link.end; continue; }
    }
    if (c === "<") {
      const m = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i.exec(rest());
      if (m) { flush(); out.append(anchor(m[1], m[1])); i += m[0].length; continue; }
    }
    if ((c === "h" || c === "H") && !/[\w/]/.test(text[i - 1] || "")) {
      const m = /^https?:\/\/[^\s<>"]+/i.exec(rest());
      if (m) {
        const url = m[0].replace(/[.,;:!?)\]'*_]+$/, "");
        flush();
        out.append(anchor(url, url));
        i += url.length;
        continue;
      }
    }
    buffer += c;
    i++;
  }
  flush();
  return out;
}

function emphasis(text, i, depth) {
  const c = text[i];
  const double = text[i + 1] === c;
  if (c === "~" && !double) return null;
  const marker = double ? c + c : c;
  const open = i + marker.length;
  if (open >= text.length || /\s/.test(text[open]) || text[open] === c) return null;
  if (c === "_" && /[\p{L}\p{N}]/u.test(text[i - 1] || "")) return null; // snake_case
  let close = open;
  const limit = Math.min(text.length, open + MAX_SCAN);
  while (close < limit) {
    close = text.indexOf(marker, close + 1);
    if (close < 0 || close >= limit) return null;
    if (/\s/.test(text[close - 1])) continue;
    if (!double && text[close + 1] === c) { close++; continue; }
    if (c === "_" && /[\p{L}\p{N}]/u.test(text[close + marker.length] || "")) continue;
    const tag = c === "~" ? "del" : double ? "strong" : "em";
    return { node: inline(text.slice(open, close), h(tag), depth + 1), end: close + marker.length };
  }
  return null;
}

function linkAt(text, i, depth, prefix) {
  // [label](url "title"): the label may hold inline Markdown, the url no spaces.
  let level = 0;
  let j = i;
  const limit = Math.min(text.length, i + MAX_SCAN);
  for (; j < limit; j++) {
    if (text[j] === "\\") { j++; continue; }
    if (text[j] === "[") level++;
    else if (text[j] === "]" && --level === 0) break;
  }
  if (j >= limit || text[j + 1] !== "(") return null;
  const m = /^\(\s*<?([^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*)>?(?:\s+"[^"]*")?\s*\)/.exec(text.slice(j + 1, j + 1 + MAX_SCAN));
  if (!m) return null;
  const label = text.slice(i + 1, j);
  const node = anchor(m[1], null);
  if (prefix) node.append(prefix);
  inline(label || m[1], node, depth + 1);
  return { node, end: j + 1 + m[0].length };
}

/** A link when the URL is allowed; otherwise its label as plain text (marked as such). */
function anchor(rawUrl, label) {
  const href = safeUrl(rawUrl);
  const node = href
    ? h("a", { href, target: "_blank", rel: "noopener noreferrer nofollow", referrerpolicy: "no-referrer" })
    : h("span", { class: "unsafe-link", title: "link removed: only http, https and mailto links are allowed" });
  if (label !== null) node.append(label);
  return node;
}
