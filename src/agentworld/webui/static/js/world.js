// One open world: its event stream, approvals desk, agents strip, chat list and chat view.
// The stream stays open while the person moves between the world's chats and pages; a chat is
// read from the API when it is shown, with the events that come meanwhile held back and
// applied after it (each message is shown once, however it arrives).

import { api, wholeTranscript } from "./api.js";
import { ApprovalDesk } from "./approvals.js";
import { askChatName, renderChatHead, renderChatList } from "./chat_list.js";
import { Composer } from "./composer.js";
import { confirmDialog, formatCost, formatTokens, h, replace, toast } from "./dom.js";
import { agentDialog } from "./forms.js";
import { MessageActions } from "./message_actions.js";
import { QuestionDesk } from "./questions.js";
import { WorldStream } from "./stream.js";
import { ChatView } from "./transcript.js";

const STATE_TEXT = { idle: "not connected", live: "live", reconnecting: "reconnecting…", offline: "offline, retrying…" };

function debounce(fn, ms) {
  let timer = null;
  return () => { clearTimeout(timer); timer = setTimeout(fn, ms); };
}

export class WorldSession {
  constructor(name, shell) {
    this.name = name;
    this.shell = shell; // {connection, badge, count, navigate}
    this.world = null;
    this.agents = [];
    this.usage = {};
    this.busy = new Map(); // agent -> Set(messageId)
    this.chats = [];
    this.chatId = null;
    this.view = null;
    this.pendingChat = null; // {chatId, events} while a transcript is read
    this.filterAgent = null;
    this.refreshAgents = debounce(() => this.loadAgents(), 700);
    this.refreshChats = debounce(() => this.loadChats(), 1200);
    this.onView = null; // policy page reload hook
  }

  async start(chatId) {
    [this.world, { agents: this.agents }, { chats: this.chats }] = await Promise.all([
      api.world(this.name), api.agents(this.name), api.chats(this.name),
    ]);
    this.chatId = this.pickChat(chatId);
    let after = null;
    let transcript = null;
    if (this.chatId) {
      transcript = await wholeTranscript(this.name, this.chatId);
      after = transcript.lastEventId;
    }
    this.stream = new WorldStream(this.name, after, {
      onEvent: (kind, data) => this.event(kind, data),
      onState: (state) => this.connection(state),
    });
    this.desk = new ApprovalDesk({
      world: this.name, badge: this.shell.badge, count: this.shell.count, announcer: this.shell.announcer,
      host: () => (this.view === "chat" ? this.approvalSlot ?? null : null),
      chatName: (id) => this.chats.find((c) => c.chatId === id)?.name ?? id,
      currentChat: () => (this.view === "chat" ? this.chatId : null),
      infoFor: (chat, id) => (chat === this.chatId && this.chatView ? this.chatView.approvalInfo(id) : null),
      onJump: (chat) => this.shell.navigate(`#/w/${encodeURIComponent(this.name)}/c/${encodeURIComponent(chat)}`),
      others: () => (this.questions ? [...this.questions.pending.values()] : []),
    });
    this.questions = new QuestionDesk({
      world: this.name,
      host: () => (this.view === "chat" ? this.approvalSlot ?? null : null),
      currentChat: () => (this.view === "chat" ? this.chatId : null),
      onAsked: (q) => { if (q.chatId === this.chatId) this.chatView?.setCardStatus(q.questionId, "waiting", "waiting for your answer"); },
      onChange: () => this.desk.refresh(),
    });
    this.firstTranscript = transcript;
    api.approvals(this.name).then((r) => this.desk.load(r.approvals)).catch((err) => toast(err.message, { error: true }));
    this.questions.load(); // every chat's: the badge counts them
    this.loadUsage();
  }

  pickChat(wanted) {
    const ids = this.chats.map((c) => c.chatId);
    if (wanted && ids.includes(wanted)) return wanted;
    if (this.world.currentChatId && ids.includes(this.world.currentChatId)) return this.world.currentChatId;
    return ids.at(-1) ?? null;
  }

  destroy() {
    this.stream?.close();
    this.desk?.destroy();
    this.questions?.destroy();
    this.connection("idle");
  }

  connection(state) {
    const el = this.shell.connection;
    el.dataset.state = state;
    el.querySelector(".label").textContent = STATE_TEXT[state] ?? state;
    if (this.stream?.lastSeq != null) el.dataset.lastEventId = String(this.stream.lastSeq);
  }

  // -- events ---------------------------------------------------------------------------------

  event(kind, data) {
    if (this.stream?.lastSeq != null) this.shell.connection.dataset.lastEventId = String(this.stream.lastSeq);
    const chat = data.chatId ?? data.message?.chatId ?? null;
    const cut = kind === "crud" && data.entity === "message" && data.operation === "delete";
    if (this.pendingChat && chat === this.pendingChat.chatId && (kind === "message" || kind === "sse" || kind === "approval" || cut)) {
      this.pendingChat.events.push([kind, data]);
    }
    switch (kind) {
      case "message": {
        const m = data.message;
        this.markIdle(m.sender, m.messageId);
        if (m.role === "assistant") this.refreshAgents();
        if (!this.chats.some((c) => c.chatId === m.chatId)) this.loadChats();
        else this.refreshChats();
        if (this.chatView && m.chatId === this.chatId && !this.pendingChat) {
          if (data.traceId) this.chatView.noteTrace(m.messageId, data.traceId);
          this.chatView.message(m);
        }
        break;
      }
      case "sse":
        if (data.phase === "start" || data.phase === "chunk") this.markBusy(data.agent, data.messageId);
        else this.markIdle(data.agent, data.messageId);
        if (this.chatView && chat === this.chatId && !this.pendingChat) this.chatView.sse(data);
        break;
      case "approval":
        this.desk.event(data);
        if (data.phase === "answered" && this.chatView && chat === this.chatId && !this.pendingChat) {
          this.chatView.answerLine(data.approvalId, data.detail);
        }
        break;
      case "question":
        this.questions.event(data);
        break;
      case "crud":
        this.crud(data);
        break;
      case "system":
        if (!chat || chat === this.chatId) toast(data.text, { error: data.level === "error" });
        break;
      case "tool":
        if (this.chatView && chat === this.chatId && data.phase === "start") this.chatView.setCardStatus(data.toolCallId, "running");
        break;
      default:
        break;
    }
  }

  crud(e) {
    if (e.entity === "world") {
      if (e.operation === "delete") {
        toast(`World ${this.name} was deleted.`, { error: true });
        this.shell.navigate("#/");
      } else api.world(this.name).then((w) => { this.world = w; }).catch(() => {});
    } else if (e.entity === "agent") {
      this.loadAgents();
    } else if (e.entity === "message" && e.operation === "delete") {
      this.cut(e);
    } else if (e.entity === "chat") {
      if (e.operation === "delete" && e.chatId === this.chatId) {
        this.chatId = null;
        this.loadChats().then(() => this.shell.navigate(`#/w/${encodeURIComponent(this.name)}`));
      } else this.loadChats();
    } else if (e.entity === "policy") {
      this.onView?.();
    }
  }

  /** Messages were removed from a chat (deleted from there, or an edit re-running it), here or
   * anywhere else: they leave the view, and the approvals and questions that waited in them
   * leave the page (read afresh: the server has dropped them). */
  cut(e) {
    const ids = Array.isArray(e.data?.messageIds) ? e.data.messageIds : [];
    if (this.chatView && e.chatId === this.chatId && !this.pendingChat && !this.chatView.remove(ids)) {
      this.openChat(this.chatId);
    }
    this.refreshChats();
    this.desk.reread(e.chatId);
    this.questions.reread(e.chatId);
  }

  markBusy(agent, id) {
    if (!this.busy.has(agent)) this.busy.set(agent, new Set());
    const set = this.busy.get(agent);
    if (!set.has(id)) { set.add(id); this.renderAgents(); }
  }

  markIdle(agent, id) {
    if (this.busy.get(agent)?.delete(id)) this.renderAgents();
  }

  // -- data -----------------------------------------------------------------------------------

  async loadAgents() {
    try {
      ({ agents: this.agents } = await api.agents(this.name));
      this.renderAgents();
      this.composer?.renderPreview();
      this.loadUsage();
    } catch (err) {
      toast(err.message, { error: true });
    }
  }

  async loadUsage() {
    const found = await Promise.all(this.agents.map((a) => api.agent(this.name, a.name).catch(() => null)));
    for (const agent of found) if (agent) this.usage[agent.name] = agent.usage;
    this.renderAgents();
  }

  async loadChats() {
    try {
      ({ chats: this.chats } = await api.chats(this.name));
      this.renderChats();
    } catch (err) {
      toast(err.message, { error: true });
    }
  }

  // -- the chat page --------------------------------------------------------------------------

  /** Render the chat page into `root`, showing chat `chatId` (or the current one). */
  async showChat(root, chatId) {
    this.view = "chat";
    const wanted = this.pickChat(chatId ?? this.chatId);
    this.strip = h("div", { class: "agents-strip", testid: "agents-strip", role: "toolbar", "aria-label": "Agents" });
    this.chatList = h("ul", { class: "chat-list", testid: "chat-list", onClick: (e) => { if (e.target.closest("a")) this.closeDrawer(); } });
    this.search = h("input", { type: "search", placeholder: "Search chats", testid: "chat-search", "aria-label": "Search chats", onInput: () => this.renderChats() });
    this.sidebar = h("aside", { class: "sidebar", testid: "chat-sidebar", "aria-label": "Chats" },
      h("button", { type: "button", class: "primary", testid: "chat-new", onClick: () => this.newChat() }, "New chat"),
      this.search, this.chatList);
    this.head = h("div", { class: "chat-head" });
    this.transcript = h("div", { class: "transcript", testid: "transcript", role: "log", "aria-label": "Transcript", tabindex: "0" });
    this.chatView = new ChatView(this.transcript, { onReview: (id) => this.desk.open(id, { focus: true }), onBusy: () => {} });
    const actions = new MessageActions({ view: this.chatView, world: () => this.name, onBranched: (chatId) => this.openNew(chatId) });
    this.chatView.tools = (m) => actions.tools(m);
    // Approval cards go here, between the transcript and the composer; they never take the focus.
    this.approvalSlot = h("div", { class: "approval-slot", testid: "approval-slot" });
    this.composer = new Composer({
      agents: () => this.agents.map((a) => a.name),
      mainAgent: () => this.world?.mainAgent ?? null,
      onSend: (text) => this.send(text),
      onStop: () => this.stop(),
    });
    replace(root, h("div", { class: "world-layout" }, this.sidebar,
      h("section", { class: "chat-main", "aria-label": "Chat" }, this.strip, this.head, this.transcript, this.approvalSlot, this.composer.el)));
    this.renderAgents();
    this.renderChats();
    await this.openChat(wanted);
  }

  async openChat(chatId) {
    this.chatId = chatId;
    this.renderChats();
    this.renderHead();
    this.closeDrawer();
    if (!chatId) {
      this.chatView.load([]);
      return;
    }
    let transcript = this.firstTranscript;
    this.firstTranscript = null;
    if (!transcript) {
      this.pendingChat = { chatId, events: [] };
      try {
        transcript = await wholeTranscript(this.name, chatId);
      } catch (err) {
        this.pendingChat = null;
        toast(err.message, { error: true });
        return;
      }
    }
    if (this.chatId !== chatId) return; // moved on meanwhile
    const held = this.pendingChat?.events ?? [];
    this.pendingChat = null;
    this.chatView.load(transcript.messages);
    for (const [kind, data] of held) {
      if (kind === "message") this.chatView.message(data.message);
      else if (kind === "sse") this.chatView.sse(data);
      else if (kind === "approval" && data.phase === "answered") this.chatView.answerLine(data.approvalId, data.detail);
      else if (kind === "crud" && !this.chatView.remove(data.data?.messageIds ?? [])) {
        this.openChat(chatId);
        return;
      }
    }
    this.chatView.setFilter(this.filterAgent);
    this.desk.refresh();
    this.questions.refresh();
    this.questions.load(chatId);
  }

  closeDrawer() {
    this.sidebar?.classList.remove("open");
    this.shell.menu.setAttribute("aria-expanded", "false");
  }

  async stop() {
    if (!this.chatId) return;
    try {
      const done = await api.stop(this.name, this.chatId);
      toast(done.stopped ? "Stopped." : "Nothing was running here.");
    } catch (err) {
      toast(`Not stopped: ${err.message}`, { error: true });
    }
  }

  async send(text) {
    try {
      let chat = this.chatId;
      if (!chat) {
        chat = (await api.newChat(this.name)).chatId;
        await this.loadChats();
        await this.shell.navigate(`#/w/${encodeURIComponent(this.name)}/c/${encodeURIComponent(chat)}`);
      }
      await api.post(this.name, chat, text);
    } catch (err) {
      toast(`Not sent: ${err.message}`, { error: true });
      throw err;
    }
  }

  /** Open a chat just made (new, or a branch of a message here). */
  async openNew(chatId) {
    await this.loadChats();
    await this.shell.navigate(`#/w/${encodeURIComponent(this.name)}/c/${encodeURIComponent(chatId)}`);
  }

  async newChat() {
    try {
      await this.openNew((await api.newChat(this.name)).chatId);
    } catch (err) {
      toast(err.message, { error: true });
    }
  }

  renderChats() {
    if (!this.chatList) return;
    renderChatList(this.chatList, {
      world: this.name, chats: this.chats, current: this.chatId, query: this.search?.value.trim().toLowerCase() ?? "",
    });
    this.renderHead();
  }

  renderHead() {
    if (!this.head) return;
    renderChatHead(this.head, {
      world: this.name, chats: this.chats, chat: this.chats.find((c) => c.chatId === this.chatId), filterAgent: this.filterAgent,
      onRename: (chat) => this.rename(chat), onDelete: (chat) => this.deleteChat(chat), onClearFilter: () => this.setFilter(null),
    });
  }

  setFilter(agent) {
    this.filterAgent = this.filterAgent === agent ? null : agent;
    this.chatView?.setFilter(this.filterAgent);
    this.renderAgents();
    this.renderHead();
  }

  async rename(chat) {
    const name = await askChatName(chat);
    if (!name) return;
    try {
      await api.changeChat(this.name, chat.chatId, { name });
      await this.loadChats();
    } catch (err) {
      toast(err.message, { error: true });
    }
  }

  async deleteChat(chat) {
    if (!(await confirmDialog(`Delete chat "${chat.name}" and its ${chat.messageCount} messages?`))) return;
    try {
      await api.deleteChat(this.name, chat.chatId);
      this.chatId = null;
      await this.loadChats();
      await this.shell.navigate(`#/w/${encodeURIComponent(this.name)}`, { force: true });
    } catch (err) {
      toast(err.message, { error: true });
    }
  }

  renderAgents() {
    if (!this.strip) return;
    const chips = this.agents.map((a) => {
      const usage = this.usage[a.name];
      const busy = (this.busy.get(a.name)?.size ?? 0) > 0;
      return h("span", { class: `agent-chip${busy ? " busy" : ""}`, testid: "agent-chip", dataset: { agent: a.name, busy: String(busy) }, "aria-pressed": String(this.filterAgent === a.name) },
        h("span", { class: "status", title: busy ? "writing" : a.status }),
        h("button", { type: "button", class: "name", title: "Show only this agent's messages", "aria-pressed": String(this.filterAgent === a.name), onClick: () => this.setFilter(a.name) }, a.name),
        h("span", { class: "stats", testid: "agent-stats", title: usage && "costUsd" in usage ? "cost of its calls (unpriced calls: +?)" : null },
          `${a.llmCallCount} calls${usage ? ` · ${formatTokens(usage)}` : ""}${formatCost(usage) ? ` · ${formatCost(usage)}` : ""}`),
        h("button", { type: "button", class: "icon-btn", testid: "agent-edit", "aria-label": `Edit agent ${a.name}`, onClick: () => this.editAgent(a) }, "✎"));
    });
    replace(this.strip, chips, h("button", { type: "button", testid: "agent-add", onClick: () => this.editAgent(null) }, "+ Agent"));
  }

  async editAgent(agent) {
    const saved = await agentDialog(this.name, agent);
    if (saved) {
      toast(agent ? `Saved ${saved.name}.` : `Agent ${saved.name} created.`);
      await this.loadAgents();
    }
  }
}
