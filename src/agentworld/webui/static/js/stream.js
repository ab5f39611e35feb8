// One event stream per open world (GET /api/worlds/{w}/events). Every stored event carries its
// position in the world's event log as its SSE id; the browser reconnects by itself with
// Last-Event-ID after a drop, and when it gives up (the server was away) we open a new stream
// with ?after= the last position seen. Events at or before that position are dropped here, so
// a replay never shows anything twice. Token chunks have no position: they are live only.

import { api } from "./api.js";

const KINDS = ["message", "sse", "tool", "system", "crud", "approval", "question"];

export class WorldStream {
  /** `after`: the log position the page was read at (null: from now on). */
  constructor(world, after, { onEvent, onState }) {
    this.world = world;
    this.lastSeq = after ?? null;
    this.onEvent = onEvent;
    this.onState = onState;
    this.source = null;
    this.retry = null;
    this.delay = 1000;
    this.closed = false;
    this.open();
  }

  open() {
    if (this.closed) return;
    const source = new EventSource(api.eventsUrl(this.world, this.lastSeq));
    this.source = source;
    for (const kind of KINDS) source.addEventListener(kind, (e) => this.dispatch(kind, e));
    source.onopen = () => {
      this.delay = 1000;
      this.onState("live");
    };
    source.onerror = () => {
      if (this.closed || source !== this.source) return;
      if (source.readyState === EventSource.CLOSED) {
        // The browser gave up (an error status, a server restart): open anew from our position.
        this.onState("offline");
        this.retry = setTimeout(() => this.open(), this.delay);
        this.delay = Math.min(this.delay * 2, 10000);
      } else {
        this.onState("reconnecting");
      }
    };
  }

  dispatch(kind, event) {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    const live = kind === "sse" && data.phase === "chunk";
    if (!live) {
      const seq = Number(event.lastEventId);
      if (Number.isFinite(seq) && event.lastEventId !== "") {
        if (this.lastSeq !== null && seq <= this.lastSeq) return; // seen already
        this.lastSeq = seq;
      }
    }
    this.onEvent(kind, data);
  }

  /** Hang up now (tests and the "reconnect" button use it to prove nothing is lost). */
  drop() {
    this.source?.close();
    this.onState("offline");
    clearTimeout(this.retry);
    this.retry = setTimeout(() => this.open(), 200);
  }

  close() {
    this.closed = true;
    clearTimeout(this.retry);
    this.source?.close();
  }
}
