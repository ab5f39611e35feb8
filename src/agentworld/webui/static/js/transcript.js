// The chat view: the transcript as it is stored, kept current from the event stream. Each
// message is shown once (keyed by its id, whatever path it came by); answers stream in token
// by token as plain text and are replaced in place by the stored, Markdown-rendered message.
// Tool calls and their results form one card with a status; approval requests and answers
// show as a line, and the card of a call that asked follows it (the run after the answer).

import { append, h, replace, timeEl } from "./dom.js";
import { inline, renderMarkdown } from "./markdown.js";

export const APPROVAL_CALL = "client.requestApproval";

/** Whether `call` is an approval request the runtime made: its injected call alone in a message
 * of its own, with no text. A model may name that tool too (the runtime refuses such a call);
 * it is shown as the tool call it is, never as a request to review. */
export function isApprovalRequest(m, call) {
  return call.function.name === APPROVAL_CALL && m.role === "assistant" && !m.content
    && (m.tool_calls ?? []).length === 1;
}

export function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** running | done | failed | denied | interrupted, from a tool result's stored content. */
export function resultStatus(content) {
  const value = parseJson(content ?? "");
  if (value && typeof value === "object" && !Array.isArray(value)) {
    if ("error" in value) {
      const error = String(value.error);
      if (/^interrupted/i.test(error)) return "interrupted";
      if (/denied/i.test(error)) return "denied";
      return "failed";
    }
    if (typeof value.exit_code === "number" && value.exit_code !== 0) return "failed";
  }
  return "done";
}

/** A result the runtime begins with a one-line note (a person edited the call before it ran):
 * the note, and the result after it. */
export function splitNote(content) {
  const text = String(content ?? "");
  const at = text.indexOf("\n");
  if (parseJson(text) === undefined && at > 0 && parseJson(text.slice(at + 1)) !== undefined) {
    return { note: text.slice(0, at), rest: text.slice(at + 1) };
  }
  return { note: null, rest: text };
}

function statusTag(status, label) {
  return h("span", { class: "status-tag", testid: "tool-status", dataset: { status } }, label ?? status);
}

function pretty(text) {
  const value = parseJson(text ?? "");
  return value === undefined ? String(text ?? "") : JSON.stringify(value, null, 2);
}

function resultBody(content) {
  const value = parseJson(content ?? "");
  if (value && typeof value === "object" && "stdout" in value) {
    return [
      value.stdout ? h("pre", { testid: "tool-stdout" }, value.stdout) : null,
      value.stderr ? h("pre", { class: "error-text" }, value.stderr) : null,
      h("div", { class: "muted" }, `exit ${value.exit_code ?? "?"}${value.duration_ms != null ? ` · ${Math.round(value.duration_ms)} ms` : ""}`),
    ];
  }
  return h("pre", { testid: "tool-result" }, pretty(content));
}

function answerText(answer) {
  if (!answer || typeof answer !== "object") return "answered";
  if (answer.decision === "approve") {
    const how = { session: "approved for this session", always: "approved always" }[answer.scope] ?? "approved once";
    return answer.edited === true || answer.arguments != null ? `${how}, as edited` : how;
  }
  return answer.reason === "timeout" ? "denied (timed out)" : "denied";
}

export class ChatView {
  /** `tools(m)`: the actions of a stored message (message_actions.js), put in its head. */
  constructor(container, { onReview, onBusy, tools = () => null }) {
    this.el = container;
    this.onReview = onReview;
    this.onBusy = onBusy;
    this.tools = tools;
    this.reset();
  }

  reset() {
    this.nodes = new Map(); // messageId -> element (stored or streaming)
    this.stored = new Set(); // messageIds shown as stored messages
    this.messages = new Map(); // messageId -> message
    this.order = []; // messageIds of the stored messages, tool results included, in chat order
    this.removed = new Set(); // messageIds removed from the chat: never shown again
    this.cards = new Map(); // toolCallId -> {card, status, body}
    this.results = new Map(); // toolCallId -> tool message (a result may be read first)
    this.approvals = new Map(); // approvalId -> {line, info}
    this.streams = new Map(); // messageId -> {node, text, agent}
    this.traces = new Map(); // messageId -> the trace id of the model call that wrote it
    this.filter = null;
    replace(this.el);
  }

  /** Show a whole transcript (read from the API). */
  load(messages) {
    this.reset();
    const atEnd = document.createDocumentFragment();
    for (const message of messages) this.message(message, atEnd);
    this.el.append(atEnd);
    if (!messages.length) this.el.append(h("p", { class: "muted empty", testid: "transcript-empty" }, "No messages yet. Say hello below."));
    this.scrollToEnd(true);
  }

  nearEnd() {
    return this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 120;
  }

  scrollToEnd(force = false) {
    if (force || this.nearEnd()) this.el.scrollTop = this.el.scrollHeight;
  }

  /** A stored message (from the transcript or the stream); shown once. */
  message(m, into = null) {
    if (this.stored.has(m.messageId) || this.removed.has(m.messageId)) return;
    this.stored.add(m.messageId);
    this.messages.set(m.messageId, m);
    this.order.push(m.messageId);
    this.el.querySelector(".empty")?.remove();
    if (m.role === "tool") {
      this.toolResult(m);
      return;
    }
    const stick = this.nearEnd();
    const node = this.render(m);
    const streaming = this.streams.get(m.messageId);
    if (streaming) {
      streaming.node.replaceWith(node);
      this.streams.delete(m.messageId);
      this.onBusy(streaming.agent, false);
    } else {
      (into ?? this.el).append(node);
    }
    this.nodes.set(m.messageId, node);
    this.applyFilter(node);
    if (!into && stick) this.scrollToEnd(true);
  }

  render(m) {
    const human = m.role === "user";
    const system = m.role === "system" || m.sender === "system";
    const kind = system ? "system" : human ? "human" : "agent";
    const head = h("div", { class: "msg-head" }, h("span", { class: "sender", testid: "message-sender" }, m.sender || m.role), timeEl(m.createdAt));
    if (m.replyToMessageId) {
      head.append(h("a", {
        class: "reply-link", href: `#msg-${m.replyToMessageId}`, testid: "reply-link",
        onClick: (e) => { e.preventDefault(); this.reveal(m.replyToMessageId); },
      }, "reply to ", this.messages.get(m.replyToMessageId)?.sender ?? "a message"));
    }
    const tools = this.tools(m);
    if (tools) head.append(tools);
    const node = h("article", {
      class: `msg ${kind}`, id: `msg-${m.messageId}`, testid: system ? "system-message" : "message",
      dataset: { messageId: m.messageId, sender: m.sender ?? "", role: m.role },
    }, head);
    const trace = this.traces.get(m.messageId);
    if (trace) markTrace(node, trace);
    if (m.content) node.append(h("div", { class: "md", testid: "message-body" }, renderMarkdown(m.content)));
    for (const call of m.tool_calls ?? []) {
      if (isApprovalRequest(m, call)) node.append(this.approvalLine(m, call), ...this.cardAfterApproval(call.id));
      else node.append(this.toolCard(call));
    }
    return node;
  }

  /** The card of a call that asked for approval: it moves under the approval, so the run (and
   * its result, which comes later) reads after the answer that allowed it. The message that
   * made the call keeps a line saying where it went. */
  cardAfterApproval(approvalId) {
    const entry = this.cards.get(this.approvals.get(approvalId)?.info.toolCallId);
    if (!entry || entry.moved) return [];
    entry.moved = true;
    entry.card.replaceWith(h("p", { class: "muted tool-moved", testid: "tool-moved" },
      "calls ", h("code", {}, entry.card.dataset.tool), ", which asks for approval below"));
    return [entry.card];
  }

  toolCard(call) {
    const status = statusTag("running");
    const body = h("div", { class: "body" }, h("div", { class: "muted" }, "arguments"), h("pre", {}, pretty(call.function.arguments)));
    const card = h("details", { class: "tool-card", testid: "tool-card", dataset: { toolCallId: call.id, tool: call.function.name } },
      h("summary", {}, h("code", {}, call.function.name), status), body);
    this.cards.set(call.id, { card, status, body });
    const result = this.results.get(call.id);
    if (result) this.fillResult(call.id, result);
    return card;
  }

  setCardStatus(toolCallId, status, label) {
    const entry = this.cards.get(toolCallId);
    if (!entry) return;
    const tag = statusTag(status, label);
    entry.status.replaceWith(tag);
    entry.status = tag;
  }

  toolResult(m) {
    const approval = this.approvals.get(m.tool_call_id);
    if (approval) {
      this.answerLine(m.tool_call_id, parseJson(m.content ?? ""));
      return;
    }
    this.results.set(m.tool_call_id, m);
    this.fillResult(m.tool_call_id, m);
  }

  fillResult(toolCallId, m) {
    const entry = this.cards.get(toolCallId);
    if (!entry || entry.done) return;
    entry.done = true;
    const { note, rest } = splitNote(m.content);
    const status = resultStatus(rest);
    this.setCardStatus(toolCallId, status);
    append(entry.body, [h("div", { class: "muted" }, "result"),
      note ? h("p", { class: "tool-note", testid: "tool-note" }, note) : null, resultBody(rest)]);
    if (status !== "done") entry.card.open = true;
  }

  approvalLine(m, call) {
    const request = parseJson(call.function.arguments) ?? {};
    const status = statusTag("waiting", "waiting for you");
    const review = h("button", { type: "button", testid: "approval-review", onClick: () => this.onReview(call.id) }, "Review");
    const line = h("div", { class: "approval-line", testid: "approval-line", dataset: { approvalId: call.id } },
      h("strong", {}, "Approval requested:"), inline(String(request.message ?? request.toolName ?? ""), h("span")), status, review);
    const original = this.messages.get(m.replyToMessageId);
    const info = {
      toolCallId: request.toolCallId, shell: request.shell, reason: original?.content ?? null,
      toolArguments: request.toolArguments, message: request.message,
    };
    this.approvals.set(call.id, { line, status, review, info });
    if (request.toolCallId && !this.cards.get(request.toolCallId)?.done) {
      this.setCardStatus(request.toolCallId, "waiting", "waiting for approval");
    }
    return line;
  }

  /** An approval request was answered (its stored answer, or the event saying so). */
  answerLine(approvalId, answer) {
    const entry = this.approvals.get(approvalId);
    if (!entry || entry.answered) return;
    entry.answered = true;
    const text = answerText(answer);
    const tag = statusTag(answer?.decision === "approve" ? "done" : "denied", text);
    entry.status.replaceWith(tag);
    entry.status = tag;
    entry.review.remove();
    const callId = entry.info.toolCallId;
    // A call a person corrected before approving it ran with these arguments, not the asked ones.
    const edited = answer?.decision === "approve" ? answer.arguments ?? (answer.edited ? answer.toolArgs : null) : null;
    const card = callId ? this.cards.get(callId) : null;
    if (edited && card && !card.edited) {
      card.edited = true;
      card.body.children[1]?.after(h("div", { class: "tool-note" }, "edited by a person before approving, to"),
        h("pre", { testid: "tool-edited-args" }, JSON.stringify(edited, null, 2)));
    }
    if (callId && !this.cards.get(callId)?.done) {
      this.setCardStatus(callId, answer?.decision === "approve" ? "running" : "denied", answer?.decision === "approve" ? "running" : "denied");
    }
  }

  approvalInfo(approvalId) {
    return this.approvals.get(approvalId)?.info ?? null;
  }

  /** The trace of the work that wrote a message (an event's `traceId`, when traces are on). */
  noteTrace(messageId, traceId) {
    this.traces.set(messageId, traceId);
    const shown = this.nodes.get(messageId);
    if (shown) markTrace(shown, traceId);
  }

  /** Streaming progress of an answer (sse start / chunk / end / error). */
  sse(event) {
    const id = event.messageId;
    if (event.traceId) this.noteTrace(id, event.traceId);
    if (this.stored.has(id)) return;
    let entry = this.streams.get(id);
    if (event.phase === "error") {
      if (entry) entry.node.remove();
      this.streams.delete(id);
      this.onBusy(event.agent, false);
      return;
    }
    if (!entry) {
      const text = document.createTextNode("");
      const writing = h("span", { class: "writing", testid: "writing" }, "writing…");
      const node = h("article", { class: "msg agent streaming", testid: "streaming-message", dataset: { messageId: id, sender: event.agent } },
        h("div", { class: "msg-head" }, h("span", { class: "sender" }, event.agent), writing),
        h("div", { class: "stream-text", testid: "stream-text" }, text));
      entry = { node, text, writing, agent: event.agent };
      this.streams.set(id, entry);
      this.el.querySelector(".empty")?.remove();
      const stick = this.nearEnd();
      this.el.append(node);
      this.applyFilter(node);
      this.onBusy(event.agent, true);
      if (stick) this.scrollToEnd(true);
    }
    if (event.phase === "chunk") {
      const stick = this.nearEnd();
      entry.text.appendData(event.content ?? "");
      if (stick) this.scrollToEnd(true);
    } else if (event.phase === "end") {
      entry.text.data = event.content ?? entry.text.data; // whole text: mends chunks missed
      entry.writing.textContent = "";
    }
  }

  /** How many stored messages (tool results included, as the chat counts them) go when
   * the chat is cut at `messageId`: that one and all after it. */
  countFrom(messageId) {
    const at = this.order.indexOf(messageId);
    return at < 0 ? 0 : this.order.length - at;
  }

  /** The messages from `messageId` on are being removed: shown faded until the event says so. */
  markGoing(messageId) {
    const at = this.order.indexOf(messageId);
    if (at < 0) return;
    for (const id of this.order.slice(at)) this.nodes.get(id)?.classList.add("going");
  }

  /** Messages removed from the chat (a `crud` delete event): their elements go, with any answer
   * still streaming after them. False when the view cannot follow by itself (a tool result
   * removed while the call that asked for it stays): the caller reads the chat afresh. */
  remove(ids) {
    const gone = new Set(ids);
    const after = (a, b) => Boolean(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
    const first = ids.map((id) => this.nodes.get(id)).filter(Boolean)
      .reduce((earliest, node) => (!earliest || after(node, earliest) ? node : earliest), null);
    for (const [id, entry] of this.streams) {
      if (gone.has(id) || (first && after(first, entry.node))) {
        entry.node.remove();
        this.streams.delete(id);
        this.onBusy(entry.agent, false);
      }
    }
    let clean = true;
    for (const id of ids) {
      this.removed.add(id);
      const m = this.messages.get(id);
      if (!m) continue;
      if (m.role === "tool") {
        const call = [...this.messages.values()].find((c) => (c.tool_calls ?? []).some((t) => t.id === m.tool_call_id));
        if (call && !gone.has(call.messageId)) clean = false;
        this.results.delete(m.tool_call_id);
      }
      for (const call of m.tool_calls ?? []) {
        this.cards.delete(call.id);
        this.approvals.delete(call.id);
      }
      this.nodes.get(id)?.remove();
      this.nodes.delete(id);
      this.stored.delete(id);
      this.messages.delete(id);
    }
    this.order = this.order.filter((id) => !gone.has(id));
    if (!this.order.length && !this.streams.size && !this.el.querySelector(".empty")) {
      this.el.append(h("p", { class: "muted empty", testid: "transcript-empty" }, "No messages yet. Say hello below."));
    }
    return clean;
  }

  reveal(messageId) {
    const node = this.nodes.get(messageId);
    if (!node) return;
    node.hidden = false;
    node.scrollIntoView({ block: "center", behavior: "smooth" });
    node.classList.add("highlight");
    setTimeout(() => node.classList.remove("highlight"), 1500);
  }

  setFilter(agent) {
    this.filter = agent ? agent.toLowerCase() : null;
    for (const node of this.el.querySelectorAll("article")) this.applyFilter(node);
  }

  applyFilter(node) {
    node.hidden = this.filter !== null && (node.dataset.sender ?? "").toLowerCase() !== this.filter;
  }
}

/** The trace of the model call that wrote a message (sent when traces are on): the sender's
 * tooltip names it, and the message element carries it for copying or linking. */
function markTrace(node, traceId) {
  node.dataset.traceId = traceId;
  const sender = node.querySelector(".msg-head .sender");
  if (sender) sender.title = `trace ${traceId}`;
}
