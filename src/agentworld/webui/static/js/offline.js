// The offline banner: while the server cannot be reached — the event stream is down (for more
// than a moment) or a request failed on the network — a banner under the top bar says so
// plainly; it goes as soon as the stream is live again or a request gets an answer.

const GRACE_MS = 1500; // a stream that is back within this is a blip, not "offline"

let banner = null;
let streamDown = false;
let fetchFailed = false;
let graceTimer = null;

function render() {
  if (!banner) return;
  const down = streamDown || fetchFailed;
  banner.hidden = !down;
  document.body.dataset.offline = String(down);
}

/** A request reached the server (`true`) or failed on the network (`false`). */
export function reportFetch(reached) {
  if (fetchFailed === !reached) return;
  fetchFailed = !reached;
  render();
}

function streamState(state) {
  if (state === "live" || state === "idle") {
    clearTimeout(graceTimer);
    graceTimer = null;
    streamDown = false;
    if (state === "live") fetchFailed = false;
    render();
  } else if (!streamDown && graceTimer === null) {
    // Each failed retry says "reconnecting" again: the first one starts the grace period.
    graceTimer = setTimeout(() => { graceTimer = null; streamDown = true; render(); }, GRACE_MS);
  }
}

/** Follow the connection indicator's state (set by the world's stream) and show `el` while the
 * server is away. */
export function installOffline(el, connection) {
  banner = el;
  new MutationObserver(() => streamState(connection.dataset.state)).observe(connection, { attributes: true, attributeFilter: ["data-state"] });
  render();
}
