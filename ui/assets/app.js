// condense-proxy live page. Plain JavaScript, no libraries: it reads the
// JSON endpoints under /ui/api/, follows /ui/api/events (read with fetch so
// the key can travel in a header) and draws its charts as SVG. Text that
// came from requests is only ever set with textContent.
'use strict';

const KEY = 'condense-proxy-ui-key';
const SVG = 'http://www.w3.org/2000/svg';
const $ = (sel) => document.querySelector(sel);
// The colours of style.css's variables, for SVG attributes (which take no var()).
const C = {
  received: '#5b7cfa', forwarded: '#14a37f', window: '#8a91a3', threshold: '#e8833a',
  summary: '#8b5cf6', digest: '#0ea5e9', marker: '#f59e0b', degraded: '#e5484d',
  system: '#64748b', user: '#5b7cfa', assistant: '#14a37f', tool: '#d9a21b', other: '#b4b9c6',
};

// h builds an HTML element: h('td', {class: 'num'}, 'text', child…).
function h(tag, attrs, ...kids) { return build(document.createElement(tag), attrs, kids); }
// s builds an SVG element.
function s(tag, attrs, ...kids) { return build(document.createElementNS(SVG, tag), attrs, kids); }
function build(el, attrs, kids) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === undefined || kid === null || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

const num = (n) => (n || 0).toLocaleString('en-US');
function short(n) {
  n = n || 0;
  if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + 'M';
  if (Math.abs(n) >= 1e3) return (n / 1e3).toFixed(n >= 1e4 ? 0 : 1) + 'k';
  return String(n);
}
const plural = (n, word) => num(n) + ' ' + word + (n === 1 ? '' : 's');
const pct = (a, b) => (b > 0 ? (100 * a / b).toFixed(1) + '%' : '—');
// frac shows a fraction the API worked out (null: not defined) as a percentage.
const frac = (f) => (f === null || f === undefined ? '—' : (100 * f).toFixed(1) + '%');
// Bills are in input tokens' worth (units of the model's input price).
const bill = (x) => short(Math.round(x || 0));
const billExact = (x) => num(Math.round(x || 0));
// usd shows dollars (null: the model has no known price).
function usd(x) {
  if (x === null || x === undefined) return 'unknown price';
  const a = Math.abs(x);
  return '$' + (a >= 100 ? num(Math.round(x)) : x.toFixed(a >= 1 ? 2 : a >= 0.01 ? 3 : 5));
}
// usdOf is the dollar figure of a sum with priced requests (sums.priced),
// or null when none has a price.
const usdOf = (sums, x) => (sums.priced > 0 ? x : null);
// saved says what a saving (a fraction, null: none) means; would, for
// observe mode's: what auto would save.
function saved(f, would) {
  if (f === null || f === undefined) return 'nothing billed yet';
  if (would) return f >= 0 ? 'would save ' + frac(f) : 'would cost ' + frac(-f) + ' more';
  return f >= 0 ? 'saved ' + frac(f) : 'costs ' + frac(-f) + ' more';
}
// measuredText says what a measured usage sum shows (reads, writes,
// uncached: the prompt cache as the provider reported it).
function measuredText(m) {
  if (!m || !m.requests) return m && m.not_reported ? 'not reported (' + plural(m.not_reported, 'answer') + ' without usage)' : 'nothing measured yet';
  return short(m.cache_read) + ' read / ' + short(m.cache_write) + ' written / ' + short(m.uncached) + ' outside the prompt cache';
}
function ago(t) {
  const d = Math.max(0, (Date.now() - new Date(t).getTime()) / 1000);
  if (d < 60) return Math.round(d) + ' s ago';
  if (d < 3600) return Math.round(d / 60) + ' min ago';
  if (d < 86400) return Math.round(d / 3600) + ' h ago';
  return Math.round(d / 86400) + ' d ago';
}
const clock = (t) => new Date(t).toLocaleTimeString('en-GB', { hour12: false });
function dur(s) {
  if (s < 60) return Math.round(s) + ' s';
  if (s < 3600) return Math.round(s / 60) + ' min';
  if (s < 86400) return (s / 3600).toFixed(1) + ' h';
  return (s / 86400).toFixed(1) + ' d';
}

class Unauthorized extends Error {}

function key() { return sessionStorage.getItem(KEY) || ''; }
function headers() { const k = key(); return k ? { Authorization: 'Bearer ' + k } : {}; }

async function api(path) {
  const r = await fetch(path, { headers: headers(), cache: 'no-store' });
  if (r.status === 401) throw new Unauthorized();
  if (!r.ok) {
    let msg = r.status + ' ' + r.statusText;
    try { msg = (await r.json()).error || msg; } catch (e) { /* not JSON */ }
    const err = new Error(msg);
    err.status = r.status;
    throw err;
  }
  return r.json();
}

// ---- routing: #/ , #/c/{id} , #/c/{id}/r/{n}

function route() {
  const m = location.hash.match(/^#\/c\/([0-9a-f]+)(?:\/r\/(\d+))?/);
  return m ? { conv: m[1], req: m[2] ? Number(m[2]) : null } : { conv: null, req: null };
}

// ---- state and refresh

const state = { overview: null, convs: [], conv: null, detail: null, detailKey: '', access: '' };
let refreshing = false, again = false;

async function refresh() {
  if (refreshing) { again = true; return; }
  refreshing = true;
  try {
    do {
      again = false;
      await load();
    } while (again);
  } finally {
    refreshing = false;
  }
}

async function load() {
  const r = route();
  try {
    const [ov, cl] = await Promise.all([api('/ui/api/overview'), api('/ui/api/conversations')]);
    state.overview = ov;
    state.convs = cl.conversations;
    state.access = ov.access;
    // A request's detail never changes once recorded: it is fetched once
    // per route, so what the reader opened in it stays open.
    const key = r.req ? r.conv + '/' + r.req : '';
    const kept = key && key === state.detailKey ? state.detail : null;
    state.conv = null;
    state.detail = kept;
    state.detailKey = key;
    state.missing = '';
    if (r.conv) {
      try {
        state.conv = await api('/ui/api/conversations/' + r.conv);
        if (r.req && !kept) state.detail = await api('/ui/api/conversations/' + r.conv + '/requests/' + r.req);
      } catch (e) {
        if (e instanceof Unauthorized) throw e;
        state.missing = e.message;
      }
    }
    showApp();
    render(r);
  } catch (e) {
    if (e instanceof Unauthorized) { showLogin(); return; }
    console.error('condense-proxy page:', e);
    setLive('error', 'error: ' + e.message);
  }
}

// ---- live updates: the event stream, else polling

let pollTimer = null, streamCtl = null;

function setLive(kind, text) {
  const el = $('#live');
  el.className = 'live ' + kind;
  el.textContent = text;
}

async function follow() {
  if (streamCtl) streamCtl.abort();
  const ctl = new AbortController();
  streamCtl = ctl;
  try {
    const r = await fetch('/ui/api/events', { headers: headers(), cache: 'no-store', signal: ctl.signal });
    if (r.status === 401) { showLogin(); return; }
    if (!r.ok || !r.body) throw new Error('no stream');
    stopPolling();
    setLive('on', 'live');
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (/^event: update/m.test(ev)) refresh();
      }
    }
    throw new Error('stream ended');
  } catch (e) {
    if (ctl.signal.aborted) return;
    startPolling();
    setTimeout(() => { if (streamCtl === ctl) follow(); }, 15000);
  }
}

function startPolling() {
  setLive('poll', 'polling every 3 s');
  if (!pollTimer) pollTimer = setInterval(refresh, 3000);
}
function stopPolling() { if (pollTimer) { clearInterval(pollTimer); pollTimer = null; } }

// ---- login

function showLogin() {
  stopPolling();
  if (streamCtl) { streamCtl.abort(); streamCtl = null; }
  $('#app').hidden = true;
  $('#login').hidden = false;
  $('#forget').hidden = !key();
  $('#login-error').textContent = key() ? 'That key is not accepted.' : '';
  setLive('off', 'locked');
  $('#access').textContent = '';
  $('#login-key').focus();
}

function showApp() {
  $('#login').hidden = true;
  $('#app').hidden = false;
  $('#forget').hidden = !key();
}

$('#login-form').addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem(KEY, $('#login-key').value.trim());
  $('#login-key').value = '';
  start();
});
$('#forget').addEventListener('click', () => { sessionStorage.removeItem(KEY); showLogin(); });
window.addEventListener('hashchange', () => { refresh().then(() => focusPanel()); });

function focusPanel() {
  const r = route();
  const el = r.req ? $('#detail') : r.conv ? $('#conv') : null;
  if (el && !el.hidden) el.scrollIntoView({ block: 'start' });
}

// ---- rendering

function render(r) {
  const ov = state.overview;
  const labels = { admin: 'admin: every conversation', caller: 'your conversations', numbers: 'numbers only' };
  $('#access').textContent = labels[ov.access] || ov.access;
  $('#numbers-only').hidden = ov.access !== 'numbers';
  $('#replica').textContent = 'this replica · up ' + dur((new Date(ov.now) - new Date(ov.started)) / 1000);
  renderCards(ov);
  $('#minutes').replaceChildren(minutesChart(ov.minutes));
  renderModes(ov);
  renderModels(ov);
  renderConvs(r);
  renderConv(r);
  renderDetail(r);
}

function stat(label, value, sub, cls) {
  return h('div', { class: 'stat ' + (cls || '') }, h('div', { class: 'label' }, label),
    h('div', { class: 'value', title: String(value) }, value), h('div', { class: 'sub', title: sub }, sub));
}

function renderCards(ov) {
  const t = ov.totals, o = ov.outcomes, a = ov.applied;
  const condensed = o.condensed || 0;
  const savedTokens = t.tokens_received - t.tokens_forwarded;
  const topReason = ov.degraded_reasons && ov.degraded_reasons.length ? ov.degraded_reasons[0].reason : 'none';
  $('#cards').replaceChildren(
    stat('Requests', num(t.requests), (t.errors ? plural(t.errors, 'error') + ' · ' : '') + plural(ov.conversations, 'conversation')),
    stat('Condensed', num(condensed), pct(condensed, t.requests) + ' · full ' + num(a.full) + ' · selective ' + num(a.selective) + ' · window ' + num(a.truncate)),
    // Tokens not sent are summed per request: a conversation condensed once counts its removed tokens again on
    // every later request, which would mostly have been cheap prompt-cache reads. The saving is the bill's, below.
    stat('Tokens', short(t.tokens_received) + ' → ' + short(t.tokens_forwarded), 'received → forwarded, summed per request · ' + pct(savedTokens, t.tokens_received) + ' not sent (not a saving: see the bill)'),
    stat('Bill (estimated)', bill(t.bill_uncondensed) + ' → ' + bill(t.bill),
      saved(ov.bill_saving) + ' · uncondensed → forwarded, in input tokens\' worth', ov.bill_saving < 0 ? 'warn' : ''),
    stat('Bill in dollars (estimated)', t.priced > 0 ? usd(t.bill_uncondensed_usd) + ' → ' + usd(t.bill_usd) : 'unknown price',
      t.priced > 0 ? 'each request\'s bill at its model\'s input price' + (t.unpriced ? ' · ' + plural(t.unpriced, 'request') + ' of unknown price left out' : '')
        : (t.unpriced ? 'no model seen has a known input price (input_price_per_mtok)' : 'nothing billed yet')),
    stat('Bill (measured)', ov.measured.requests ? bill(ov.measured.bill) + ' (est. ' + bill(ov.measured.estimated_bill) + ')' : 'not reported',
      measuredText(ov.measured) + (ov.measured.requests ? ' · what the provider reported, in input tokens\' worth' +
        (ov.measured.bill_usd !== null ? ' · ' + usd(ov.measured.bill_usd) : '') +
        ' · estimate error ' + frac(ov.measured.estimate_error) + ' on input' +
        (ov.measured.not_reported ? ' · ' + plural(ov.measured.not_reported, 'request') + ' not reported' : '') : ''),
      ov.measured.not_reported ? 'warn' : ''),
    stat('Prompt cache', frac(ov.cache_read_share), ov.cache_read_share === null ? 'nothing forwarded yet'
      : 'of the forwarded tokens read from the provider\'s prompt cache (estimated)' + (t.prefix_requests > 0 ? ' · prefix kept ' + pct(t.prefix_reused, t.prefix_forwarded) : '')),
    stat('Summaries', num(t.summaries), num(t.summaries_cached || 0) + ' from the summary cache · ' + plural(t.summarizer_calls, 'summarizer call') +
      ' · ' + plural(t.digests, 'digest') + ' · ' + plural(t.windows, 'window') + ' made'),
    stat('Degraded', num(t.degraded), t.degraded ? topReason : 'no fallback used', t.degraded ? 'warn' : ''),
  );
  const obs = t.observe;
  if (obs && obs.requests > 0) {
    // What turning auto on would save, on the requests observe mode forwarded as received.
    $('#cards').append(stat('Observe: auto would bill', bill(obs.bill) + ' → ' + bill(obs.would_bill),
      saved(ov.observe_saving, true) +
      ' · ' + plural(obs.requests, 'request') + ' observed, ' + num(obs.would_condense) + ' would be condensed', 'observe'));
  }
  const ho = ov.holdout;
  if (ho) {
    // The holdout arm (condense.holdout_share): conversations forwarded as received vs condensed ones.
    const arm = (name, a) => name + ': ' + plural(a.conversations, 'conversation') + ', ' + plural(a.requests, 'request') +
      ', ' + (a.cost_per_conversation === null ? '—' : billExact(a.cost_per_conversation)) + ' per conversation (' + usd(a.usd_per_conversation) + ')' +
      (a.measured_cost_per_conversation !== null ? ', measured ' + billExact(a.measured_cost_per_conversation) + ' (' + usd(a.measured_usd_per_conversation) + ')'
        : a.not_reported ? ', measured: not reported' : '');
    $('#cards').append(stat('Holdout arm', ho.enough ? saved(ho.saving) : 'too little data to tell',
      ho.verdict + ' · ' + arm('condensed', ho.condensed) + ' · ' + arm('holdout', ho.holdout), 'observe'));
  }
  const ka = ov.keepalive;
  if (ka) {
    $('#cards').append(stat('Keep-alive', plural(ka.pings, 'ping'),
      short(ka.cache_read) + ' prompt-cache reads bought · net saving ' + short(Math.round(ka.net_saving)) + ' input tokens' +
      (ka.ping_writes ? ' · ' + num(ka.ping_writes) + ' found the prompt cache gone' : '') + (ka.ping_errors ? ' · ' + plural(ka.ping_errors, 'error') : ''),
      ka.net_saving < 0 ? 'warn' : ''));
  }
}

function minutesChart(mins) {
  const W = 520, H = 170, L = 44, R = 8, T = 10, B = 22;
  const max = Math.max(1, ...mins.map((m) => m.received));
  const bw = (W - L - R) / mins.length;
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'tokens per minute' });
  for (const f of [0, 0.5, 1]) {
    svg.append(s('line', { x1: L, x2: W - R, y1: y(max * f), y2: y(max * f), stroke: '#eceef3' }),
      s('text', { x: L - 6, y: y(max * f) + 4, 'text-anchor': 'end', 'font-size': 10, fill: '#6b7385' }, short(max * f)));
  }
  mins.forEach((m, i) => {
    const x = L + i * bw;
    const tip = clock(m.t * 1000) + ': ' + num(m.requests) + ' requests, ' + num(m.received) + ' received, ' + num(m.forwarded) + ' forwarded';
    if (m.received > 0) svg.append(s('rect', { x: x + 0.5, y: y(m.received), width: Math.max(1, bw - 1.5), height: y(0) - y(m.received), fill: '#c9d4fd' }, s('title', {}, tip)));
    if (m.forwarded > 0) svg.append(s('rect', { x: x + 0.5 + bw * 0.2, y: y(m.forwarded), width: Math.max(1, bw * 0.6 - 1), height: y(0) - y(m.forwarded), fill: C.forwarded }, s('title', {}, tip)));
  });
  svg.append(s('text', { x: L, y: H - 6, 'font-size': 10, fill: '#6b7385' }, '−60 min'),
    s('text', { x: W - R, y: H - 6, 'font-size': 10, fill: '#6b7385', 'text-anchor': 'end' }, 'now'));
  return h('div', { class: 'chart' }, svg,
    h('div', { class: 'legend' }, h('span', { class: 'sw-received' }, 'received'), h('span', { class: 'sw-forwarded' }, 'forwarded')));
}

function renderModes(ov) {
  const rows = (ov.modes || []).map((m) => h('tr', {},
    h('td', {}, m.mode),
    h('td', { class: 'num' }, num(m.condensed + m.unchanged + m.passed + m.not_counted)),
    h('td', { class: 'badges' }, Object.entries(m.applied || {}).sort().map(([k, v]) => h('span', { class: 'badge ' + k }, k + ' ' + num(v)))),
    h('td', { class: 'num' }, num(m.unchanged)),
    h('td', { class: 'num' }, num(m.passed)),
    h('td', { class: 'num' }, m.degraded ? h('span', { class: 'badge degraded' }, num(m.degraded)) : '0')));
  $('#modes').replaceChildren(rows.length ? h('table', {},
    h('thead', {}, h('tr', {}, h('th', {}, 'mode asked'), h('th', { class: 'num' }, 'requests'), h('th', {}, 'condensed'),
      h('th', { class: 'num', title: 'over the threshold, forwarded as received' }, 'unchanged'),
      h('th', { class: 'num' }, 'under'), h('th', { class: 'num' }, 'degraded'))),
    h('tbody', {}, rows)) : h('p', { class: 'muted' }, 'No request yet.'));
  const reasons = ov.degraded_reasons || [];
  $('#degraded').replaceChildren(reasons.length ? h('div', {}, h('h3', { class: 'sub-h' }, 'Degraded outcomes'),
    h('table', {}, h('tbody', {}, reasons.map((r) => h('tr', {}, h('td', {}, r.reason, r.kind ? h('span', { class: 'muted' }, ' · ' + r.kind) : ''),
      h('td', { class: 'num' }, num(r.count))))))) : '');
}

function renderModels(ov) {
  const rows = (ov.models || []).map((m) => h('tr', {},
    h('td', { class: 'trunc', title: m.model }, m.model || '(none)'),
    h('td', { class: 'num' }, num(m.requests)),
    h('td', { class: 'num' }, num(m.condensed)),
    h('td', { class: 'num' }, short(m.tokens_received) + ' → ' + short(m.tokens_forwarded)),
    h('td', { class: 'num' }, pct(m.tokens_received - m.tokens_forwarded, m.tokens_received)),
    h('td', { class: 'num', title: billExact(m.bill_uncondensed) }, bill(m.bill_uncondensed)),
    h('td', { class: 'num', title: billExact(m.bill) }, bill(m.bill)),
    h('td', { class: 'num' + (m.bill_saving < 0 ? ' worse' : '') }, frac(m.bill_saving)),
    h('td', { class: 'num' }, usd(usdOf(m, m.bill_usd))),
    h('td', { class: 'num' }, frac(m.cache_read_share))));
  $('#models').replaceChildren(rows.length ? h('table', {},
    h('thead', {}, h('tr', {}, h('th', {}, 'model'), h('th', { class: 'num' }, 'requests'), h('th', { class: 'num' }, 'condensed'),
      h('th', { class: 'num' }, 'tokens'), h('th', { class: 'num', title: 'tokens not sent, summed per request: not a saving (see bill saved)' }, 'not sent'),
      h('th', { class: 'num', title: 'estimated bill had the requests gone as received, in input tokens\' worth' }, 'bill uncondensed'),
      h('th', { class: 'num', title: 'estimated bill of the requests forwarded, in input tokens\' worth' }, 'bill forwarded'),
      h('th', { class: 'num' }, 'bill saved'),
      h('th', { class: 'num', title: 'estimated bill of the requests forwarded at the model\'s input price' }, 'bill $'),
      h('th', { class: 'num', title: 'share of the forwarded tokens read from the prompt cache (estimated)' }, 'prompt cache reads'))),
    h('tbody', {}, rows)) : h('p', { class: 'muted' }, 'No request yet.'));
}

function convName(c) {
  return (c.caller ? c.caller + ' · ' : '') + c.id.slice(0, 8);
}

function meter(c) {
  if (!c.window) return '';
  const f = Math.min(1, c.tokens_forwarded / c.window);
  const hot = c.trigger && c.tokens_received > c.trigger;
  return h('span', { class: 'meter', title: pct(c.tokens_forwarded, c.window) + ' of the window forwarded' },
    h('i', { class: hot ? 'hot' : '', 'data-w': f }));
}

function renderConvs(r) {
  const list = state.convs;
  $('#conv-count').textContent = list.length ? '· ' + list.length + ' kept, newest first' : '';
  if (!list.length) {
    $('#convs').replaceChildren(h('p', { class: 'muted' }, state.access === 'caller'
      ? 'No conversation of yours yet: send requests through the proxy with this key.'
      : 'No conversation yet: point an agent at this proxy.'));
    return;
  }
  const rows = list.map((c) => h('tr', {
    class: 'click' + (c.id === r.conv ? ' sel' : ''), 'data-conv': c.id,
    onclick: () => { location.hash = '#/c/' + c.id; },
  },
  h('td', { title: new Date(c.last).toLocaleString() }, ago(c.last)),
  h('td', { class: 'mono' }, convName(c), c.identified ? '' : h('span', { class: 'muted', title: 'the engine did not name this conversation: all requests of this caller are grouped here' }, ' · whole caller')),
  h('td', { class: 'trunc', title: c.model }, c.model),
  h('td', { class: 'trunc', title: c.user_agent || '' }, c.content ? (c.user_agent || '—') : h('span', { class: 'muted' }, 'hidden')),
  h('td', { class: 'num' }, num(c.requests)),
  h('td', { class: 'num' }, short(c.tokens_received) + ' → ' + short(c.tokens_forwarded), meter(c)),
  h('td', { class: 'num', title: billExact(c.bill_uncondensed) + ' uncondensed → ' + billExact(c.bill) + ' forwarded' + (c.observed ? '; auto would bill ' + billExact(c.would_bill) : '') },
    bill(c.bill), ' ', h('span', { class: 'muted' + (c.bill_saving < 0 ? ' worse' : '') }, '(' + frac(c.bill_saving) + ')'),
    h('div', { class: 'muted' }, usd(c.bill_usd)),
    c.observed ? h('div', { class: 'muted' }, (c.arm === 'holdout' ? 'if condensed' : 'auto') + ': ' + bill(c.would_bill) + ' (' + frac(c.observe_saving) + ')') : ''),
  h('td', { class: 'badges' }, h('span', { class: 'badge ' + c.applied }, c.applied),
    c.arm === 'holdout' ? h('span', { class: 'badge', title: 'holdout arm (condense.holdout_share): forwarded as received' }, ' holdout') : '', c.degraded ? h('span', { class: 'badge degraded', title: 'degraded requests' }, ' ' + c.degraded + ' degraded') : ''),
  h('td', { class: 'num' }, num(c.condensed))));
  $('#convs').replaceChildren(h('table', {},
    h('thead', {}, h('tr', {}, h('th', {}, 'last seen'), h('th', {}, 'conversation'), h('th', {}, 'model'), h('th', {}, 'agent'),
      h('th', { class: 'num' }, 'requests'), h('th', { class: 'num' }, 'tokens now (received → forwarded)'),
      h('th', { class: 'num', title: 'estimated bill of all its requests, in input tokens\' worth, and the share saved against uncondensed' }, 'bill (saved)'),
      h('th', {}, 'mode applied'), h('th', { class: 'num' }, 'condensed'))),
    h('tbody', {}, rows)));
  // Widths from data attributes: the CSP allows no inline style markup.
  for (const i of document.querySelectorAll('.meter i')) i.style.width = (100 * Number(i.dataset.w)) + '%';
}

const KINDS = ['summary', 'digest', 'window'];
const APPLIED_KIND = { full: 'summary', selective: 'digest', truncate: 'window' };

// kinds lists the changes in effect in a request, by kind, with how many
// are new since the previous request.
function kinds(q) {
  const k = [];
  [q.summaries, q.digests, q.windows].forEach((c, j) => { if (c) k.push([KINDS[j], c, q.new[j]]); });
  if (!k.length && APPLIED_KIND[q.applied]) k.push([APPLIED_KIND[q.applied], 0, 0]);
  if (q.degraded) k.push(['degraded', 0, 0]);
  return k;
}

// marks lists what happened at request i, for the chart's markers: the
// changes that are new there; when the engine reports no list of changes,
// a condensation that starts, changes mode or goes deeper.
function marks(reqs, i) {
  const q = reqs[i], p = reqs[i - 1];
  const k = [];
  if (q.summaries + q.digests + q.windows > 0) {
    q.new.forEach((c, j) => { if (c) k.push(KINDS[j]); });
  } else if (APPLIED_KIND[q.applied] && (!p || p.applied !== q.applied || q.tokens_forwarded < p.tokens_forwarded)) {
    k.push(APPLIED_KIND[q.applied]);
  }
  if (q.degraded) k.push('degraded');
  return k;
}

function renderConv(r) {
  const el = $('#conv');
  if (!r.conv) { el.hidden = true; return; }
  el.hidden = false;
  if (!state.conv) {
    el.replaceChildren(h('p', { class: 'muted' }, 'Conversation not available: ' + (state.missing || 'not kept') + '. ', h('a', { href: '#/' }, 'back')));
    return;
  }
  const c = state.conv.conversation, reqs = state.conv.requests;
  el.replaceChildren(
    h('div', { class: 'panel-head' }, h('h2', {}, 'Conversation ', h('span', { class: 'mono' }, convName(c))),
      h('span', { class: 'muted' }, c.model + (c.content && c.user_agent ? ' · ' + c.user_agent : '') + (c.format ? ' · ' + c.format : '')),
      h('span', { class: 'spacer' }), h('a', { href: '#/' }, 'close')),
    h('div', { class: 'chips' },
      chip('requests', num(c.requests) + (c.kept < c.requests ? ' (last ' + num(c.kept) + ' kept)' : '')),
      chip('tokens now', num(c.tokens_received) + ' → ' + num(c.tokens_forwarded)),
      chip('window', num(c.window)), chip('threshold', num(c.trigger)),
      chip('condensed', num(c.condensed)), chip('degraded', num(c.degraded)),
      chip('bill, est.', billExact(c.bill_uncondensed) + ' → ' + billExact(c.bill) + ' (' + saved(c.bill_saving) + ')'),
      chip('bill in dollars', c.bill_usd === null ? 'unknown price' : usd(c.bill_uncondensed_usd) + ' → ' + usd(c.bill_usd) +
        (c.unpriced ? ' (' + plural(c.unpriced, 'request') + ' of unknown price left out)' : '')),
      chip('measured', c.measured.requests ? measuredText(c.measured) + ' · bill ' + billExact(c.measured.bill) + ' (est. ' + billExact(c.measured.estimated_bill) + ')' +
        (c.measured.not_reported ? ' · ' + num(c.measured.not_reported) + ' not reported' : '') : measuredText(c.measured)),
      c.arm ? chip('arm', c.arm === 'holdout' ? 'holdout: forwarded as received (condense.holdout_share)' : 'condensed') : '',
      c.observed ? chip('observe', plural(c.observed, 'request') + ', auto would bill ' + billExact(c.would_bill) + ' (' + saved(c.observe_saving, true) + ')') : '',
      chip('first seen', new Date(c.first).toLocaleString())),
    timeline(reqs, c.id),
    h('div', { class: 'legend' },
      h('span', { class: 'sw-received' }, 'received'), h('span', { class: 'sw-forwarded' }, 'forwarded'),
      h('span', { class: 'sw-window' }, 'window'), h('span', { class: 'sw-threshold' }, 'threshold'),
      h('span', { class: 'dot sw-summary' }, 'summary'), h('span', { class: 'dot sw-digest' }, 'digest'),
      h('span', { class: 'dot sw-marker' }, 'window marker'), h('span', { class: 'dot sw-degraded' }, 'degraded')),
    requestsTable(reqs, c.id, r.req));
}

function chip(label, value) { return h('span', { class: 'chip' }, label + ' ', h('b', {}, value)); }

const markerColor = { summary: C.summary, digest: C.digest, window: C.marker, degraded: C.degraded };

function timeline(reqs, id) {
  const W = 1200, H = 300, L = 60, R = 16, T = 30, B = 34;
  if (!reqs.length) return h('p', { class: 'muted' }, 'No request kept.');
  const maxRecv = Math.max(...reqs.map((q) => q.tokens_received), ...reqs.map((q) => q.trigger));
  const maxWin = Math.max(...reqs.map((q) => q.window));
  // The window is drawn when it is not far above everything else.
  const top = Math.max(1, maxRecv, maxWin <= maxRecv * 1.6 ? maxWin : 0) * 1.06;
  const n = reqs.length;
  const x = (i) => (n === 1 ? (L + W - R) / 2 : L + (W - L - R) * i / (n - 1));
  const y = (v) => T + (H - T - B) * (1 - Math.min(v, top) / top);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'tokens per request', class: 'timeline' });
  for (let k = 0; k <= 4; k++) {
    const v = top * k / 4;
    svg.append(s('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: '#eceef3' }),
      s('text', { x: L - 8, y: y(v) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#6b7385' }, short(Math.round(v))));
  }
  const ticks = Math.min(n, 10);
  for (let k = 0; k < ticks; k++) {
    const i = ticks === 1 ? 0 : Math.round(k * (n - 1) / (ticks - 1));
    svg.append(s('text', { x: x(i), y: H - 12, 'text-anchor': 'middle', 'font-size': 11, fill: '#6b7385' }, '#' + reqs[i].n));
  }
  svg.append(s('text', { x: W - R, y: H - 0.5, 'text-anchor': 'end', 'font-size': 10, fill: '#9aa1b1' }, 'request'));
  const pts = (f) => reqs.map((q, i) => x(i).toFixed(1) + ',' + y(f(q)).toFixed(1)).join(' ');
  const step = (f) => {
    let d = '';
    reqs.forEach((q, i) => {
      const x0 = n === 1 ? L : i === 0 ? x(0) : (x(i - 1) + x(i)) / 2;
      const x1 = n === 1 ? W - R : i === n - 1 ? x(i) : (x(i) + x(i + 1)) / 2;
      d += (i === 0 ? 'M' : 'L') + x0.toFixed(1) + ',' + y(f(q)).toFixed(1) + 'L' + x1.toFixed(1) + ',' + y(f(q)).toFixed(1);
    });
    return d;
  };
  if (maxWin > 0 && maxWin <= top) svg.append(s('path', { d: step((q) => q.window), fill: 'none', stroke: C.window, 'stroke-width': 1.5, 'stroke-dasharray': '6 4', class: 'window-line' }));
  if (maxRecv > 0) svg.append(s('path', { d: step((q) => q.trigger), fill: 'none', stroke: C.threshold, 'stroke-width': 1.5, 'stroke-dasharray': '3 3', class: 'threshold-line' }));
  if (n > 1) {
    svg.append(s('polygon', { points: x(0) + ',' + y(0) + ' ' + pts((q) => q.tokens_received) + ' ' + x(n - 1) + ',' + y(0), fill: 'rgba(91,124,250,.08)' }));
  }
  svg.append(s('polyline', { points: pts((q) => q.tokens_received), fill: 'none', stroke: C.received, 'stroke-width': 2, class: 'received-line' }),
    s('polyline', { points: pts((q) => q.tokens_forwarded), fill: 'none', stroke: C.forwarded, 'stroke-width': 2.5, class: 'forwarded-line' }));
  reqs.forEach((q, i) => {
    const go = () => { location.hash = '#/c/' + id + '/r/' + q.n; };
    const tip = '#' + q.n + ' · ' + num(q.tokens_received) + ' received → ' + num(q.tokens_forwarded) + ' forwarded · ' + q.applied + (q.degraded ? ' · degraded' : '') + (q.agent_compaction ? ' · agent compaction (' + q.agent_compaction + ')' : '');
    const ks = marks(reqs, i);
    if (n <= 120 || ks.length) {
      svg.append(s('circle', { cx: x(i), cy: y(q.tokens_forwarded), r: n > 60 ? 2.5 : 3.5, fill: C.forwarded, class: 'pt', onclick: go }, s('title', {}, tip)));
    }
    if (!ks.length) return;
    svg.append(s('line', { x1: x(i), x2: x(i), y1: T - 6, y2: y(q.tokens_forwarded), stroke: '#d5d9e3', 'stroke-dasharray': '2 3' }));
    ks.forEach((k, j) => {
      const cx = x(i), cy = T - 14 - j * 11;
      const attrs = { fill: markerColor[k], class: 'marker marker-' + k, onclick: go, cursor: 'pointer' };
      let m;
      if (k === 'summary') m = s('circle', { cx, cy, r: 5, ...attrs });
      else if (k === 'digest') m = s('rect', { x: cx - 4.5, y: cy - 4.5, width: 9, height: 9, rx: 1.5, ...attrs });
      else if (k === 'window') m = s('path', { d: `M${cx},${cy - 5.5}L${cx + 5.5},${cy + 4.5}L${cx - 5.5},${cy + 4.5}Z`, ...attrs });
      else m = s('path', { d: `M${cx},${cy - 6}L${cx + 6},${cy}L${cx},${cy + 6}L${cx - 6},${cy}Z`, ...attrs });
      m.append(s('title', {}, tip + ' · ' + k));
      svg.append(m);
    });
  });
  // Room above the plot for the markers.
  svg.setAttribute('viewBox', `0 -24 ${W} ${H + 24}`);
  return h('div', { class: 'chart' }, svg);
}

// showAll remembers, per conversation, that its whole table was asked for.
const showAll = new Set();

function requestsTable(reqs, id, sel) {
  const limit = showAll.has(id) ? reqs.length : 12;
  const shown = reqs.slice(-limit).reverse();
  const rows = shown.map((q) => h('tr', {
    class: 'click' + (q.n === sel ? ' sel' : ''), onclick: () => { location.hash = '#/c/' + id + '/r/' + q.n; },
  },
  h('td', { class: 'num' }, '#' + q.n),
  h('td', { title: new Date(q.time).toLocaleString() }, clock(q.time)),
  h('td', { class: 'num' }, q.status),
  h('td', { class: 'nowrap' }, applied(q)),
  h('td', { class: 'num' }, num(q.tokens_received)),
  h('td', { class: 'num' }, num(q.tokens_forwarded)),
  h('td', { class: 'badges' }, kinds(q).map(([k, c, fresh]) => h('span', { class: 'badge ' + k, title: fresh ? fresh + ' new in this request' : '' },
    (c ? k + ' ×' + c : k) + (fresh && fresh < c ? ' (' + fresh + ' new)' : '')))),
  h('td', { class: 'num', title: 'tokens read from the prompt cache / written (estimated)' + (q.measured ? '; measured: ' +
    (q.measured.reported ? num(q.measured.cache_read || 0) + ' / ' + num(q.measured.cache_write || 0) : 'not reported') : '') },
    short(q.cache_read) + ' / ' + short(q.cache_write),
    q.measured && q.measured.reported ? h('div', { class: 'muted' }, short(q.measured.cache_read || 0) + ' / ' + short(q.measured.cache_write || 0) + ' meas.') : ''),
  h('td', { class: 'num', title: 'uncondensed: ' + billExact(q.bill_uncondensed) }, bill(q.bill),
    q.applied === 'observe' ? h('span', { class: 'muted' }, ' (would ' + bill(q.would_bill) + ')') : ''),
  h('td', { class: 'num' }, num(q.summarizer_calls)),
  h('td', { class: 'num' }, q.duration_ms.toFixed(q.duration_ms < 10 ? 1 : 0) + ' ms')));
  const more = reqs.length > limit
    ? h('div', { class: 'more' }, h('button', { type: 'button', onclick: () => { showAll.add(id); render(route()); } }, 'show all ' + reqs.length + ' requests'))
    : '';
  return h('div', {}, h('h3', {}, 'Requests, newest first'),
    h('table', {}, h('thead', {}, h('tr', {}, h('th', { class: 'num' }, '#'), h('th', {}, 'time'), h('th', { class: 'num' }, 'status'),
      h('th', {}, 'mode → applied'), h('th', { class: 'num' }, 'received'), h('th', { class: 'num' }, 'forwarded'),
      h('th', {}, 'changes'), h('th', { class: 'num' }, 'prompt cache read / written'),
      h('th', { class: 'num', title: 'estimated bill, in input tokens\' worth' }, 'bill'),
      h('th', { class: 'num' }, 'summarizer calls'), h('th', { class: 'num' }, 'duration'))),
    h('tbody', {}, rows)), more);
}

// applied shows what was done to a request: "auto → full", or in observe
// mode what auto would have done.
function applied(q) {
  if (q.applied !== 'observe') return [q.mode + ' → ', h('span', { class: 'badge ' + q.applied }, q.applied)];
  return [(q.mode === 'observe' ? 'observe' : q.mode + ' → observe') + ' → would apply ',
    h('span', { class: 'badge ' + (q.would_apply || 'none') }, q.would_apply || 'none'), ', ' + num(q.would_tokens_after) + ' tokens'];
}

let shownDetail = null;

function renderDetail(r) {
  const el = $('#detail');
  if (!r.req || !state.conv) { el.hidden = true; shownDetail = null; return; }
  el.hidden = false;
  if (state.detail && state.detail === shownDetail) return; // already on the page
  shownDetail = state.detail;
  if (!state.detail) {
    el.replaceChildren(h('p', { class: 'muted' }, 'Request #' + r.req + ' is not kept any more.'));
    return;
  }
  const d = state.detail.request, content = state.detail.content;
  const savedTokens = d.tokens_received - d.tokens_forwarded;
  const parts = [
    h('div', { class: 'panel-head' }, h('h2', {}, 'Request #' + d.n), h('span', { class: 'muted' }, new Date(d.time).toLocaleString()),
      h('span', { class: 'spacer' }), h('a', { href: '#/c/' + r.conv }, 'close')),
    h('div', { class: 'chips' },
      chip('status', d.status), chip('mode', d.mode + ' → ' + d.applied),
      chip('tokens', num(d.tokens_received) + ' → ' + num(d.tokens_forwarded) + (savedTokens > 0 ? ' (−' + pct(savedTokens, d.tokens_received) + ')' : '')),
      chip('messages', num(d.messages)), chip('summarizer calls', num(d.summarizer_calls)),
      d.summary_levels ? chip('summaries', d.summary_levels) : '', d.cache ? chip('summary cache', d.cache) : '',
      d.prefix_reused >= 0 ? chip('prefix reused', num(d.prefix_reused)) : '',
      d.agent_compaction ? chip('agent compaction', d.agent_compaction) : '',
      d.recalls ? chip('recalls', num(d.recalls)) : '',
      chip('duration', d.duration_ms.toFixed(1) + ' ms')),
    h('div', { class: 'chips' },
      chip('prompt cache read / written', num(d.cache_read) + ' / ' + num(d.cache_write)),
      chip('bill, est.', billExact(d.bill) + ' (uncondensed ' + billExact(d.bill_uncondensed) + ')'),
      d.measured ? chip('measured', d.measured.reported ? num(d.measured.input || 0) + ' input: ' + num(d.measured.cache_read || 0) + ' read / ' +
        num(d.measured.cache_write || 0) + ' written' + (d.measured.cache_write_1h ? ' (' + num(d.measured.cache_write_1h) + ' for 1h)' : '') +
        ' / ' + num(d.measured.uncached || 0) + ' outside the prompt cache · ' + num(d.measured.output || 0) + ' output · bill ' + billExact(d.measured.bill) +
        (d.measured.answers > 1 ? ' over ' + d.measured.answers + ' answers (recall rounds)' : '') +
        (d.measured.estimate_error !== undefined ? ' · estimate error ' + frac(d.measured.estimate_error) : '') : 'not reported') : '',
      d.applied === 'observe' ? [chip('observe → would apply', d.would_apply || 'none'), chip('would forward', num(d.would_tokens_after) + ' tokens'),
        chip('would bill', billExact(d.would_bill) + ' (prompt cache read ' + num(d.would_cache_read) + ' / written ' + num(d.would_cache_write) + ')')] : ''),
  ];
  if (d.reason) parts.push(h('p', { class: 'reason' }, 'Why: ' + d.reason, d.path ? h('span', { class: 'muted' }, ' (' + d.path.join(' → ') + ')') : ''));
  const kinds = (d.degraded_kinds || []).join(', ');
  if (d.degraded) parts.push(h('div', { class: 'degraded-box' }, 'Degraded' + (d.degraded_reason ? ': ' + d.degraded_reason : kinds ? ': ' + kinds : '')));
  if (!d.detail) {
    parts.push(h('p', { class: 'muted' }, 'The texts and shapes of this request are no longer kept (the page keeps them for condensed requests within its memory budget, and for the latest request).'));
  } else {
    parts.push(h('h3', {}, 'Shape: received and forwarded'), shapes(d));
    parts.push(h('h3', {}, 'What was replaced'));
    if (!d.changes.length) {
      parts.push(h('p', { class: 'muted' }, d.applied === 'none' ? 'Nothing: the request was forwarded as received.'
        : d.applied === 'observe' ? 'Nothing: observe mode forwards the request as received; auto would have applied ' + (d.would_apply || 'none') + '.'
          : 'The engine reported no individual change for this request.'));
    }
    if (!content && d.changes.length) parts.push(h('p', { class: 'note' }, 'Numbers only: texts, tools and ids are not shown to you.'));
    parts.push(h('div', { class: 'changes' }, d.changes.map(change)));
    if (d.recall_calls && d.recall_calls.length) {
      parts.push(h('h3', {}, 'Recalls answered by the proxy'));
      parts.push(h('div', { class: 'changes' }, d.recall_calls.map((rc) => h('div', { class: 'change' },
        h('div', {}, h('b', {}, rc.outcome), rc.query ? ' query “' + rc.query + '”' : '', rc.id ? ' id ' + rc.id : '',
          ' — ' + num(rc.count) + ' item(s) returned'),
        rc.answer ? h('pre', {}, rc.answer) : ''))));
    }
  }
  el.replaceChildren(...parts);
}

const roleColor = { system: C.system, developer: C.system, user: C.user, assistant: C.assistant, tool: C.tool, 'stand-in': C.summary };

function shapes(d) {
  const recv = d.received || [], fwd = d.forwarded || recv;
  if (!recv.length) return h('p', { class: 'muted' }, 'The engine reported no shape for this request.');
  const total = recv.reduce((a, it) => a + it.tokens, 0) || 1;
  const W = 1200, L = 90, BAR = 22, SPAN = W - L - 50;
  const svg = s('svg', { viewBox: `0 0 ${W} 92`, role: 'img', 'aria-label': 'request shapes', class: 'shape' });
  const bar = (items, yy, label) => {
    svg.append(s('text', { x: 0, y: yy + 15, 'font-size': 12, fill: '#3d4558' }, label));
    let xx = L;
    items.forEach((it, i) => {
      const w = SPAN * it.tokens / total;
      svg.append(s('rect', { x: xx, y: yy, width: Math.max(0.6, w - 0.6), height: BAR, fill: roleColor[it.role] || C.other },
        s('title', {}, '#' + i + ' ' + it.role + ': ' + num(it.tokens) + ' tokens')));
      xx += w;
    });
    svg.append(s('text', { x: xx + 4, y: yy + 15, 'font-size': 11, fill: '#6b7385' }, short(items.reduce((a, it) => a + it.tokens, 0))));
  };
  bar(recv, 6, 'received');
  // The replaced ranges, under the received bar.
  const offset = (i) => L + SPAN * recv.slice(0, i).reduce((a, it) => a + it.tokens, 0) / total;
  for (const c of d.changes) {
    if (c.to <= c.from || c.to > recv.length) continue;
    svg.append(s('rect', { x: offset(c.from), y: 30, width: Math.max(2, offset(c.to) - offset(c.from)), height: 4, fill: markerColor[c.kind] || C.other }));
  }
  bar(fwd, 44, d.forwarded ? 'forwarded' : 'forwarded (as received)');
  const replaced = new Set();
  for (const c of d.changes) for (let i = c.from; i < c.to; i++) replaced.add(i);
  const list = (items, mark) => h('table', {}, h('thead', {}, h('tr', {}, h('th', { class: 'num' }, '#'), h('th', {}, 'role'), h('th', { class: 'num' }, 'tokens'))),
    h('tbody', {}, items.slice(0, 2000).map((it, i) => h('tr', { class: mark && replaced.has(i) ? 'replaced' : '' },
      h('td', { class: 'num' }, i), h('td', {}, it.role), h('td', { class: 'num' }, num(it.tokens))))));
  return h('div', {}, h('div', { class: 'chart' }, svg),
    h('div', { class: 'legend' }, ['system', 'user', 'assistant', 'tool', 'stand-in'].map((k) => h('span', { class: 'dot sw-' + k }, k)), h('span', { class: 'dot sw-other' }, 'other')),
    recv.length ? h('details', {}, h('summary', {}, 'Message list (' + recv.length + ' received, ' + fwd.length + ' forwarded' + (recv.length > 2000 ? '; first 2000 shown' : '') + ')'),
      h('div', { class: 'shapes' }, h('div', {}, h('h3', {}, 'received'), list(recv, true)), h('div', {}, h('h3', {}, 'forwarded'), list(fwd, false)))) : '');
}

function change(c) {
  const what = c.kind === 'digest'
    ? 'digest of message ' + c.from
    : 'replaces messages ' + c.from + '–' + (c.to - 1) + ' (' + (c.to - c.from) + ')';
  const box = h('div', { class: 'change ' + c.kind },
    h('div', { class: 'head' },
      h('span', { class: 'badge ' + c.kind }, c.kind + (c.level ? ' · level ' + c.level : '')),
      h('span', {}, what), c.tool ? h('span', { class: 'mono' }, c.tool) : '',
      h('span', { class: 'num' }, num(c.tokens_before) + ' → ' + num(c.tokens_after) + ' tokens'),
      c.id ? h('span', { class: 'mono muted' }, c.id) : ''),
    c.text ? h('pre', {}, c.text) : '');
  if (c.originals) {
    const out = h('div', { class: 'orig' });
    box.append(h('div', {},
      h('button', { type: 'button', onclick: () => originals(c.originals, out) }, 'show originals'), ' ',
      h('a', { href: c.originals, class: 'muted', title: c.originals.startsWith('/ui/')
        ? 'opens with the key this page uses (the conversation\'s own key or an admin key)'
        : 'needs the same key as the conversation' }, c.originals)), out);
  }
  return box;
}

async function originals(path, out) {
  out.replaceChildren(h('p', { class: 'muted' }, 'loading…'));
  try {
    const r = await fetch(path, { headers: headers(), cache: 'no-store' });
    const text = await r.text();
    if (!r.ok) {
      out.replaceChildren(h('p', { class: 'muted' }, r.status === 404
        ? (path.startsWith('/ui/')
          ? 'Not available: originals are kept for originals_ttl (and within the store\'s bound).'
          : 'Not available: originals are served only to the conversation\'s own key, for originals_ttl.')
        : r.status === 401 || r.status === 403
          ? 'Not available to this key: originals open with the conversation\'s own key or an admin key (ui.keys).'
          : 'Error ' + r.status));
      return;
    }
    let pretty = text;
    try { pretty = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* as received */ }
    out.replaceChildren(h('pre', {}, pretty));
  } catch (e) {
    out.replaceChildren(h('p', { class: 'error' }, String(e)));
  }
}

// ---- start

function start() {
  refresh().then(() => { if (!$('#app').hidden) { focusPanel(); follow(); } });
}
start();
