'use strict';
// chat-tui's browser page: IRC over a WebSocket (subprotocol text.ircv3.net), one line per frame.
// No framework. State is in S; the DOM is built with createElement/textContent only (server text
// never reaches innerHTML); render* functions redraw a part after schedule() marks it dirty.
(function () {

// ---------- helpers ----------
const $ = (id) => document.getElementById(id);
function h(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}
function button(cls, text, label) {
  const b = h('button', cls, text);
  b.type = 'button';
  if (label) { b.setAttribute('aria-label', label); b.title = label; }
  return b;
}
// Drawn icons (SVG, in the text's colour): no emoji font needed.
const ICONS = {
  clip: 'M16.5 6.5v10a4.5 4.5 0 0 1-9 0V5a3 3 0 0 1 6 0v10.5a1.5 1.5 0 0 1-3 0V6.5h-1.5v9a3 3 0 0 0 6 0V5a4.5 4.5 0 0 0-9 0v11.5a6 6 0 0 0 12 0v-10z',
  trash: 'M9 3h6l1 2h4v2H4V5h4zm-3 6h12l-1 12H7zm4 2v8h1.5v-8zm3.5 0v8H15v-8z',
};
function icon(name) {
  const ns = 'http://www.w3.org/2000/svg', svg = document.createElementNS(ns, 'svg'), path = document.createElementNS(ns, 'path');
  svg.setAttribute('class', 'icon');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '16');
  svg.setAttribute('height', '16');
  svg.setAttribute('aria-hidden', 'true');
  path.setAttribute('d', ICONS[name]);
  svg.append(path);
  return svg;
}
const utf8 = new TextEncoder();
const byteLen = (s) => utf8.encode(s).length;
function b64(s) { let bin = ''; for (const b of utf8.encode(s)) bin += String.fromCharCode(b); return btoa(bin); }
const pad = (n) => String(n).padStart(2, '0');
const hhmm = (t) => {
  const d = new Date(t), h = d.getHours();
  return prefs.clock === '12' ? ((h % 12) || 12) + ':' + pad(d.getMinutes()) + (h < 12 ? ' am' : ' pm') : pad(h) + ':' + pad(d.getMinutes());
};
const dayKey = (t) => new Date(t).toDateString();
function humanSize(n) {
  if (n < 1024) return n + ' B';
  let v = n / 1024, i = 0;
  while (v >= 1024 && i < 3) { v /= 1024; i++; }
  return (v < 10 ? Math.round(v * 10) / 10 : Math.round(v)) + ' ' + ['KiB', 'MiB', 'GiB', 'TiB'][i];
}
function firstWords(text, n) {
  const t = clean(text).replace(/\s+/g, ' ').trim();
  return t.length > n ? t.slice(0, n).replace(/\s+\S*$/, '') + '…' : t;
}
const isLoopback = (host) => /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/i.test(host);
const httpURL = (u) => { try { return /^https?:$/.test(new URL(u).protocol); } catch (e) { return false; } };

// ---------- IRC lines ----------
const TAG_UNESC = { ':': ';', s: ' ', '\\': '\\', r: '\r', n: '\n' };
const TAG_ESC = { '\\': '\\\\', ';': '\\:', ' ': '\\s', '\r': '\\r', '\n': '\\n' };
function parse(line) {
  const m = { tags: {}, source: '', nick: '', command: '', params: [] };
  let rest = line;
  const word = () => { const sp = rest.indexOf(' '); const w = sp < 0 ? rest : rest.slice(0, sp); rest = sp < 0 ? '' : rest.slice(sp + 1).replace(/^ +/, ''); return w; };
  if (rest[0] === '@') {
    for (const t of word().slice(1).split(';')) {
      const eq = t.indexOf('=');
      if (t) m.tags[eq < 0 ? t : t.slice(0, eq)] = eq < 0 ? '' : t.slice(eq + 1).replace(/\\(.?)/gs, (_, c) => TAG_UNESC[c] ?? c);
    }
  }
  if (rest[0] === ':') m.source = word().slice(1);
  m.nick = m.source.split('!')[0];
  while (rest) {
    if (rest[0] === ':') { m.params.push(rest.slice(1)); break; }
    m.params.push(word());
  }
  m.command = (m.params.shift() || '').toUpperCase();
  return m;
}
function serialize(cmd, params, tags) {
  const t = tags ? Object.keys(tags).map((k) => (tags[k] === '' ? k : k + '=' + String(tags[k]).replace(/[\\; \r\n]/g, (c) => TAG_ESC[c]))) : [];
  let s = (t.length ? '@' + t.join(';') + ' ' : '') + cmd;
  const ps = (params || []).map((p) => String(p).replace(/[\r\n\0]/g, ' '));
  ps.forEach((p, i) => { s += ' ' + (i === ps.length - 1 && (p === '' || p.includes(' ') || p[0] === ':') ? ':' + p : p); });
  return s;
}

// ---------- state ----------
const WANT = ['draft/account-registration', 'draft/webpush', 'soju.im/search', 'message-tags', 'server-time', 'echo-message', 'batch', 'labeled-response', 'sasl',
  'draft/chathistory', 'draft/event-playback', 'draft/read-marker', 'multi-prefix', 'away-notify',
  'account-notify', 'account-tag', 'extended-join', 'chghost', 'setname', 'invite-notify',
  'userhost-in-names', 'draft/message-redaction', 'draft/multiline', 'cap-notify',
  'standard-replies', 'draft/persistence', 'chat-tui.org/resume'];
const QUICK = ['👍', '❤️', '😂', '🎉', '😮', '😢'];
// Reconnecting: 1 s, then 2, 3, at most 5 s apart, so a page is back within seconds of its
// server; the wait starts again at 1 s when the page regains focus or the network comes back.
const DELAYS = [1, 2, 3, 5];
const S = {
  info: { name: location.hostname, network: '', room: null, fingerprint: null, selfSigned: false },
  ws: null, conn: 'offline', registered: false, welcomed: false, everRegistered: false, userQuit: false,
  wantNick: '', tryNick: '', nick: '', creds: null, loggedIn: false, nickNote: '',
  caps: new Set(), offered: new Map(), capPending: 0, capEnded: false, saslStarted: false,
  isupport: new Map(), prefixModes: 'ov', prefixSyms: '@+', chantypes: '#&', casemap: 'rfc1459',
  chanmodes: ['beI', 'k', 'l', 'imnst'], histMax: 100, filehost: null, network: '',
  convs: new Map(), current: null, batches: new Map(), users: new Map(),
  attempt: 0, retryTimer: null, retryDelay: 0, retryAt: 0, lastRecv: 0, away: false, awayText: '',
  // The reader at the bottom of the list (kept there through resizes), and what came below while not.
  stick: true, below: 0, lastTop: 0, readerAt: 0,
  // Lines typed while the connection is down, sent once when it is back (at most 50).
  held: [],
  reply: null, openGroups: new Set(), sent: [], sentIdx: -1, complete: null, localId: 0, jumpTo: null, pendingSelect: null,
  typing: { target: null, state: null, last: 0, timer: null },
};
// The settings panel's choices, kept in this browser (localStorage 'chat-tui.settings').
const SETTINGS = { theme: 'system', notify: true, typing: true, compact: false, colors: true, clock: '24' };
const prefs = (() => {
  try { return Object.assign({}, SETTINGS, JSON.parse(localStorage.getItem('chat-tui.settings') || '{}')); } catch (e) { return Object.assign({}, SETTINGS); }
})();
const systemLight = window.matchMedia('(prefers-color-scheme: light)');
function applyPrefs() {
  document.documentElement.dataset.theme = prefs.theme === 'system' ? (systemLight.matches ? 'light' : 'dark') : prefs.theme;
  document.body.classList.toggle('compact', !!prefs.compact);
  document.body.classList.toggle('plain-nicks', !prefs.colors);
  document.body.classList.toggle('clock12', prefs.clock === '12');
}
systemLight.addEventListener('change', applyPrefs);
applyPrefs();
const msgOf = new WeakMap();  // message element -> message
const convOf = new WeakMap(); // sidebar item -> conversation

function wsURL() {
  const q = new URLSearchParams(location.search).get('ws');
  return q && /^wss?:\/\//i.test(q) ? q : (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/irc';
}
const wsSecure = () => /^wss:/i.test(wsURL());
const wsLocal = () => { try { return isLoopback(new URL(wsURL()).hostname) && isLoopback(location.hostname); } catch (e) { return false; } };
// Passwords go only over TLS, or between a page and a server both on this machine's loopback.
const accountsAllowed = () => wsSecure() || wsLocal();

function fold(s) {
  let r = s.replace(/[A-Z]/g, (c) => c.toLowerCase());
  if (S.casemap.startsWith('rfc1459')) r = r.replace(S.casemap === 'rfc1459' ? /[[\]\\~]/g : /[[\]\\]/g, (c) => ({ '[': '{', ']': '}', '\\': '|', '~': '^' })[c]);
  else if (S.casemap !== 'ascii') r = r.toLowerCase();
  return r;
}
const isMe = (nick) => !!nick && !!S.nick && fold(nick) === fold(S.nick);
const isChannel = (name) => !!name && S.chantypes.includes(name[0]);
const isServerSource = (m) => !m.source || (!m.source.includes('!') && m.source.includes('.'));
const cur = () => (S.current ? S.convs.get(S.current) : null);
const user = (nick) => S.users.get(fold(nick));
function touchUser(nick) {
  let u = S.users.get(fold(nick));
  if (!u) S.users.set(fold(nick), (u = { nick, away: false, awayMsg: '' }));
  u.nick = nick;
  return u;
}
function getConv(name, kind) {
  const k = name === '*' ? '*' : fold(name);
  let c = S.convs.get(k);
  if (!c) {
    c = { key: k, name, kind: kind || (name === '*' ? 'server' : isChannel(name) ? 'channel' : 'dm'),
      msgs: [], byId: new Map(), members: new Map(), names: null, topic: '', joined: false, wasJoined: false,
      marker: null, lastTime: 0, lastIso: '', typing: new Map(), hist: null, histDone: false, histNone: false,
      pendReact: new Map(), pendRedact: new Map(), awayNoted: '', li: null, draft: '' };
    S.convs.set(k, c);
    schedule('sidebar');
  }
  return c;
}
const findConv = (name) => S.convs.get(name === '*' ? '*' : fold(name || ''));

// ---------- connection ----------
function send(cmd, params, tags) {
  if (!S.ws || S.ws.readyState !== 1) return false;
  S.ws.send(serialize(cmd, params, tags));
  return true;
}
function connect() {
  clearTimeout(S.retryTimer);
  S.retryTimer = null;
  let ws;
  try { ws = new WebSocket(wsURL(), ['text.ircv3.net']); } catch (e) { onClose({ reason: e.message }); return; }
  Object.assign(S, { ws, registered: false, welcomed: false, capPending: 0, capEnded: false, saslStarted: false, loggedIn: false,
    caps: new Set(), offered: new Map(), isupport: new Map(), batches: new Map(), tryNick: S.wantNick });
  setConn(S.everRegistered ? 'reconnecting' : 'connecting');
  ws.onopen = () => {
    S.lastRecv = Date.now();
    send('CAP', ['LS', '302']);
    // An account logs in with the token the server gave this tab (never a kept password); a
    // guest comes back as itself (its nickname, its rooms) within a minute of the last connection.
    const token = S.creds ? S.creds.token : resumeToken();
    if (token) send('RESUME', [token]);
    send('NICK', [S.tryNick]);
    send('USER', ['web', '0', '*', S.tryNick]);
  };
  ws.onmessage = (ev) => {
    if (ws !== S.ws || typeof ev.data !== 'string') return;
    S.lastRecv = Date.now();
    for (const l of ev.data.split(/\r?\n/)) {
      if (l) try { receive(parse(l)); } catch (e) { console.error('chat-tui: line not handled', l, e); }
    }
  };
  ws.onclose = (ev) => { if (ws === S.ws) onClose(ev); };
}
// ---------- one person on every device ----------
// The token the server gave this tab's guest (chat-tui.org/resume), kept for the tab only.
function resumeToken() { try { return sessionStorage.getItem('chat-tui.resume') || ''; } catch (e) { return ''; } }
function setResumeToken(token) {
  try { if (token) sessionStorage.setItem('chat-tui.resume', token); else sessionStorage.removeItem('chat-tui.resume'); } catch (e) { /* storage off */ }
}
// An account's login, kept by this browser (localStorage): the login token the server gave
// (RESUME TOKEN), never the password, which is forgotten once the token is in. A reload, a new
// tab or a restarted browser logs in again with it; Sign out or /quit (the server forgets the
// token too), a new password, 30 days unused or a refused token end it.
function keepLogin(creds) {
  try { if (creds && creds.token) localStorage.setItem('chat-tui.login', JSON.stringify({ account: creds.account, token: creds.token })); else if (!creds) localStorage.removeItem('chat-tui.login'); } catch (e) { /* storage off */ }
}
function keptLogin() {
  try {
    sessionStorage.removeItem('chat-tui.login'); // where an earlier version kept it
    const c = JSON.parse(localStorage.getItem('chat-tui.login') || 'null');
    return c && typeof c.account === 'string' && typeof c.token === 'string' && c.account && c.token ? { account: c.account, token: c.token } : null;
  } catch (e) { return null; }
}
// This browser's device name (account@web-xxxxxx) for a server that keeps an account present.
function deviceName() {
  try {
    let d = localStorage.getItem('chat-tui.device');
    if (!d) { d = 'web-' + Math.random().toString(36).slice(2, 8); localStorage.setItem('chat-tui.device', d); }
    return d;
  } catch (e) { return 'web'; }
}
// A guest without a way back (no resume token) is asked before a reload or close loses its rooms.
window.addEventListener('beforeunload', (e) => {
  if (S.creds || !S.registered || resumeToken()) return;
  if (![...S.convs.values()].some((c) => c.kind === 'channel' && c.joined)) return;
  e.preventDefault();
  e.returnValue = '';
});

function closeSocket() {
  const ws = S.ws;
  S.ws = null;
  if (ws) { ws.onclose = ws.onmessage = ws.onopen = null; try { ws.close(); } catch (e) { /* closed already */ } }
}
function onClose(ev) {
  const was = S.registered;
  S.ws = null;
  S.registered = S.welcomed = false;
  S.batches = new Map();
  for (const c of S.convs.values()) {
    if (was && c.kind === 'channel') { c.wasJoined = c.joined; c.joined = false; }
    for (const t of c.typing.values()) clearTimeout(t.timer);
    c.typing.clear();
    c.hist = null;
  }
  clearTimeout(S.typing.timer);
  S.typing.state = S.typing.target = null;
  if (S.userQuit || !S.everRegistered) {
    setConn('offline');
    if (!S.userQuit) {
      showLogin(!navigator.onLine ? 'You are offline: this is the page as this browser kept it. Join again when the network is back.'
        : 'Could not reach the chat server' + (ev && ev.reason ? ' (' + ev.reason + ')' : '') + '. Try again in a moment.');
    }
    return;
  }
  const d = DELAYS[Math.min(S.attempt++, DELAYS.length - 1)];
  S.retryTimer = setTimeout(connect, d * 1000);
  S.retryAt = Date.now() + d * 1000;
  setConn('reconnecting', d);
  schedule('all');
}
// Now, and from 1 s again: "Retry now", the page shown again, the network back.
function retryNow() {
  if (!S.retryTimer) return;
  S.attempt = 0;
  connect();
}
setInterval(() => { if (S.retryTimer) schedule('status'); }, 1000);
window.addEventListener('focus', retryNow);
document.addEventListener('visibilitychange', () => { if (!document.hidden) retryNow(); });
setInterval(() => {
  if (!S.ws || !S.registered) return;
  const idle = Date.now() - S.lastRecv;
  if (idle > 100000) { closeSocket(); onClose({}); } else if (idle > 45000) send('PING', ['keepalive']);
}, 15000);
window.addEventListener('online', retryNow);
function setConn(state, delay) { S.conn = state; S.retryDelay = delay || 0; schedule('status'); }

// ---------- receiving: batches and history ----------
function receive(m) {
  if (m.command === 'BATCH') return onBatch(m);
  const b = m.tags.batch && S.batches.get(m.tags.batch);
  if (b) b.items.push(m); else dispatch(m, null);
}
function onBatch(m) {
  const ref = m.params[0] || '', id = ref.slice(1);
  if (ref[0] === '+') {
    S.batches.set(id, { type: m.params[1] || '', params: m.params.slice(2), tags: m.tags, items: [], parent: m.tags.batch });
    return;
  }
  const b = S.batches.get(id);
  if (!b) return;
  S.batches.delete(id);
  const parent = b.parent && S.batches.get(b.parent);
  let items = b.items;
  if (b.type === 'draft/multiline') {
    // One message of several lines: its msgid and time are the batch's.
    const first = items.find((x) => x.command === 'PRIVMSG' || x.command === 'NOTICE');
    if (!first) return;
    const text = items.map((x, i) => (i && !('draft/multiline-concat' in x.tags) ? '\n' : '') + (x.params[1] || '')).join('');
    items = [Object.assign({}, first, { tags: Object.assign({}, first.tags, b.tags), params: [b.params[0] || first.params[0], text] })];
  }
  if (parent) parent.items.push(...items);
  else if (b.type === 'chathistory') historyBatch(b);
  else if (b.type === 'draft/chathistory-targets') items.forEach(onTarget);
  else if (b.type === 'soju.im/search') searchResults(items);
  else items.forEach((x) => dispatch(x, null));
}
function historyBatch(b) {
  const c = findConv(b.params[0]);
  if (!c) return;
  const req = c.hist || { kind: 'LATEST', limit: 50 };
  c.hist = null;
  const before = c.msgs.length;
  // A batch's lines are in order: each goes after the one before it, whatever their times (a
  // burst shares one millisecond), and an older page goes before lines of the same time.
  S.batchPos = { conv: c, last: -1, older: req.kind === 'BEFORE' };
  try {
    for (const it of b.items) dispatch(it, { conv: c, history: true, fresh: req.kind === 'AFTER' });
  } finally { S.batchPos = null; }
  if ((req.kind === 'LATEST' || req.kind === 'BEFORE') && b.items.length < req.limit) c.histDone = true;
  if (req.kind === 'AFTER' && b.items.length >= req.limit && c.msgs.length > before) history(c, 'AFTER');
  if (req.kind === 'AROUND' || req.kind === 'BETWEEN') fillForward(c, b.items, req);
  if (c === cur()) {
    renderMessages(req.kind === 'BEFORE' ? 'before' : 'keep');
    if (S.jumpTo && c.byId.has(S.jumpTo)) { jump(S.jumpTo); S.jumpTo = null; }
    markRead(c);
    moreHistory(c);
  }
  schedule('sidebar');
}
// A jump back (AROUND a message) leaves a hole between its lines and the newer ones already
// here: filled with BETWEEN, a page at a time, until it meets them (no silent gap).
function fillForward(c, items, req) {
  const newest = items.filter((x) => x.tags && x.tags.msgid && x.tags.time).pop();
  if (!newest || (req.kind === 'BETWEEN' && items.length < req.limit)) return;
  const t = Date.parse(newest.tags.time), got = new Set(items.map((x) => x.tags && x.tags.msgid));
  const next = c.msgs.find((m) => m.msgid && m.time > t && !got.has(m.msgid));
  if (!next || c.hist) return;
  const limit = Math.min(100, S.histMax || 100);
  c.hist = { kind: 'BETWEEN', limit };
  send('CHATHISTORY', ['BETWEEN', c.name, 'msgid=' + newest.tags.msgid, 'msgid=' + next.msgid, limit]);
}
// CHATHISTORY LATEST/BEFORE/AFTER for a conversation, one request at a time per conversation.
function history(c, kind, limit) {
  if (!S.caps.has('draft/chathistory') || !S.registered || c.kind === 'server' || c.hist || c.histNone) return;
  limit = Math.min(limit || (kind === 'AFTER' ? 100 : 50), S.histMax || 100);
  let ref = '*';
  const oldest = c.msgs.find((m) => m.msgid || m.iso);
  if (kind === 'AFTER' && c.lastIso) ref = 'timestamp=' + c.lastIso;
  else if (kind === 'BEFORE' && oldest) ref = oldest.msgid ? 'msgid=' + oldest.msgid : 'timestamp=' + oldest.iso;
  else kind = 'LATEST';
  c.hist = { kind, limit };
  send('CHATHISTORY', [kind, c.name, ref, limit]);
}
function moreHistory(c) {
  if (c === cur() && !c.histDone && box.scrollHeight <= box.clientHeight + 40) history(c, 'BEFORE');
}
function onTarget(m) {
  const name = m.params[1];
  if (m.command !== 'CHATHISTORY' || !name || isChannel(name) || name === '*') return;
  const c = getConv(name, 'dm');
  if (S.caps.has('draft/read-marker')) send('MARKREAD', [name]);
  if (!c.msgs.length) history(c, 'LATEST');
  if (S.pendingSelect === c.key) { S.pendingSelect = null; select(c); }
}

// ---------- receiving: dispatch ----------
// Which conversation a PRIVMSG / NOTICE / TAGMSG belongs to.
function convFor(m) {
  let target = m.params[0] || '';
  const bare = target.replace(/^[~&@%+!]+/, '');
  if (isChannel(bare)) return getConv(bare, 'channel');
  if (isServerSource(m) || target === '*') return getConv('*', 'server');
  if (isMe(m.nick)) return target && !isMe(target) ? getConv(target, 'dm') : null;
  const c = getConv(m.nick, 'dm');
  c.name = m.nick;
  return c;
}
function serverLine(text, kind) { addMsg(getConv('*', 'server'), mkMsg(kind || 'local', '', text, {})); }
function localLine(text, kind, c) {
  const m = mkMsg(kind || 'local', '', text, {});
  addMsg(c || cur() || getConv('*', 'server'), m);
}
const EVENTS = new Set(['JOIN', 'PART', 'QUIT', 'NICK', 'KICK', 'TOPIC', 'MODE']);
const LIVE = { fresh: true, live: true };

function dispatch(m, ctx) {
  const p = m.params;
  if (ctx) { // a line of history, for ctx.conv: shown, never changes who is in a room
    if (m.command === 'PRIVMSG' || m.command === 'NOTICE') onMessage(m, ctx.conv, ctx);
    else if (m.command === 'TAGMSG') onTagmsg(m, ctx.conv, ctx);
    else if (m.command === 'REDACT') onRedact(m, ctx.conv);
    else if (EVENTS.has(m.command)) eventLine(ctx.conv, m, ctx);
    return;
  }
  switch (m.command) {
    case 'PING': send('PONG', p); return;
    case 'CAP': onCap(m); return;
    case 'AUTHENTICATE': onAuthenticate(m); return;
    case 'ERROR': serverLine('The server closed the connection: ' + (p[0] || ''), 'error'); return;
    case 'PRIVMSG': case 'NOTICE': { const c = convFor(m); if (c) onMessage(m, c, LIVE); return; }
    case 'TAGMSG': { const c = convFor(m); if (c) onTagmsg(m, c, LIVE); return; }
    case 'REDACT': { const c = findConv(isChannel(p[0]) || isMe(m.nick) ? p[0] : m.nick); if (c) onRedact(m, c); return; }
    case 'JOIN': onJoin(m); return;
    case 'PART': case 'KICK': onPart(m); return;
    case 'QUIT': onQuit(m); return;
    case 'NICK': onNick(m); return;
    case 'TOPIC': { const c = findConv(p[0]); if (c) { c.topic = p[1] || ''; eventLine(c, m, LIVE); schedule('top'); } return; }
    case 'MODE': onMode(m); return;
    case 'AWAY': {
      const u = touchUser(m.nick);
      u.away = !!p[0];
      u.awayMsg = p[0] || '';
      schedule('members', 'top', 'sidebar');
      return;
    }
    case 'INVITE': localLine(m.nick + ' invites ' + (isMe(p[0]) ? 'you' : p[0]) + ' to ' + p[1] + (isMe(p[0]) ? ' — type /join ' + p[1] : '')); return;
    case 'MARKREAD': onMarkread(m); return;
    case 'RESUME':
      if ((p[0] || '').toUpperCase() !== 'TOKEN') return;
      if (S.creds || S.creating) {
        // An account's login token: kept instead of the password, which this page lets go.
        S.accountToken = p[1] || '';
        if (S.creds && S.accountToken) { S.creds = { account: S.creds.account, token: S.accountToken }; keepLogin(S.creds); }
      } else setResumeToken(p[1] || '');
      return;
    case 'REGISTER':
      if ((p[0] || '').toUpperCase() === 'SUCCESS' && S.creating) {
        // Logged in now; a reconnect logs in with it (SASL).
        S.creds = S.accountToken ? { account: p[1] || S.creating.account, token: S.accountToken } : { account: p[1] || S.creating.account, password: S.creating.password };
        S.creating = null;
        S.loggedIn = true;
        setResumeToken(''); // a guest's way back; the account is the way back now
        keepLogin(S.creds);
        try { localStorage.setItem('chat-tui.account', S.creds.account); } catch (e) { /* storage off */ }
        localLine('Your account ' + S.creds.account + ' is made and you are logged in: your history and direct messages now follow you to every window.');
        subscribePush();
      }
      return;
    case 'WEBPUSH': if ((p[0] || '').toUpperCase() === 'VAPIDPUBKEY') { S.vapid = p[1] || ''; subscribePush(); } return;
    case 'PERSISTENCE': S.persistent = (p[2] || '') === 'ON'; return;
    case 'FAIL': case 'WARN': case 'NOTE': onStandardReply(m); return;
  }
  if (/^\d{3}$/.test(m.command)) onNumeric(m);
}

// ---------- registration ----------
function onCap(m) {
  const p = m.params, sub = (p[1] || '').toUpperCase(), more = p[2] === '*';
  const list = ((more ? p[3] : p[2]) || '').split(' ').filter(Boolean);
  if (sub === 'LS' || sub === 'NEW') {
    for (const tok of list) { const eq = tok.indexOf('='); S.offered.set(eq < 0 ? tok : tok.slice(0, eq), eq < 0 ? '' : tok.slice(eq + 1)); }
    if (sub === 'LS' && more) return;
    if (sub === 'LS' && S.creds && !S.creds.token && !S.offered.has('sasl')) return authFail('This server does not offer account login (SASL). Join as a guest instead.');
    if (sub === 'LS' && S.creating && !S.offered.has('draft/account-registration')) return authFail('This server does not let visitors make accounts (the host makes them). Join as a guest instead.');
    const want = WANT.filter((c) => S.offered.has(c) && !S.caps.has(c) && (c !== 'sasl' || (S.creds && !S.creds.token && !S.registered)));
    if (!want.length) { if (sub === 'LS') afterCaps(); return; }
    const lines = [''];
    for (const c of want) {
      if (lines[0].length + c.length > 380) lines.unshift('');
      lines[0] += (lines[0] ? ' ' : '') + c;
    }
    if (!S.registered) S.capPending += lines.length;
    for (const l of lines) send('CAP', ['REQ', l]);
  } else if (sub === 'ACK' || sub === 'NAK') {
    if (sub === 'ACK') for (const tok of list) { if (tok[0] === '-') S.caps.delete(tok.slice(1)); else S.caps.add(tok); }
    if (!S.registered && --S.capPending <= 0) afterCaps();
  } else if (sub === 'DEL') {
    for (const tok of list) { S.caps.delete(tok); S.offered.delete(tok); }
  }
}
function afterCaps() {
  if (S.registered || S.saslStarted || S.capEnded) return;
  if (!S.creds || S.creds.token) return capEnd();
  if (!S.caps.has('sasl')) return authFail('This server refused account login (SASL). Join as a guest instead.');
  S.saslStarted = true;
  send('AUTHENTICATE', ['PLAIN']);
}
function capEnd() { if (!S.capEnded) { S.capEnded = true; send('CAP', ['END']); } }
function onAuthenticate(m) {
  if (m.params[0] !== '+' || !S.creds) return;
  // account@device where the server keeps each device's place (draft/persistence).
  const login = S.offered.has('draft/persistence') ? S.creds.account + '@' + deviceName() : S.creds.account;
  const payload = b64('\0' + login + '\0' + S.creds.password);
  for (let i = 0; i < payload.length; i += 400) send('AUTHENTICATE', [payload.slice(i, i + 400)]);
  if (payload.length % 400 === 0) send('AUTHENTICATE', ['+']);
}
function authFail(text) {
  S.userQuit = true;
  S.creds = null;
  keepLogin(null);
  send('QUIT', ['login failed']);
  closeSocket();
  setConn('offline');
  showLogin(text);
  $('password').value = '';
  $('password').focus();
}
function onWelcome(m) {
  Object.assign(S, { registered: true, nick: m.params[0] || S.tryNick, attempt: 0, userQuit: false, everRegistered: true });
  setConn('connected');
  try { localStorage.setItem('chat-tui.nick', S.wantNick); } catch (e) { /* storage off */ }
  showChat();
  // A new account: made now, named after the nickname (draft/account-registration).
  // Named as typed: if the server gave us another nickname (ours was taken), it says so rather
  // than making the account under that one.
  if (S.creating) send('REGISTER', [S.creating.account, '*', S.creating.password]);
  clearTimeout(S.welcomeTimer);
  S.welcomeTimer = setTimeout(afterWelcome, 2500);
}
// After the MOTD (ISUPPORT known): rejoin rooms, list direct conversations, fill gaps.
function afterWelcome() {
  if (S.welcomed || !S.registered) return;
  S.welcomed = true;
  clearTimeout(S.welcomeTimer);
  const room = S.info.room ? fold(S.info.room) : '';
  const rejoin = [...S.convs.values()].filter((c) => c.kind === 'channel' && c.wasJoined && !c.joined && c.key !== room).map((c) => c.name);
  for (let i = 0; i < rejoin.length; i += 10) send('JOIN', [rejoin.slice(i, i + 10).join(',')]);
  if (S.caps.has('draft/chathistory')) {
    let since = 0;
    for (const c of S.convs.values()) since = Math.max(since, c.lastTime);
    since = since ? since - 1000 : Date.now() - 30 * 86400000;
    send('CHATHISTORY', ['TARGETS', 'timestamp=' + new Date(since).toISOString(), 'timestamp=' + new Date(Date.now() + 60000).toISOString(), 50]);
  }
  for (const c of S.convs.values()) {
    if (c.kind !== 'dm') continue;
    if (S.caps.has('draft/read-marker')) send('MARKREAD', [c.name]);
    if (c.lastIso || c === cur()) history(c, 'AFTER');
  }
  if (S.awayText) send('AWAY', [S.awayText]);
  sendHeld(null);
  // Opened from a notification (`/#name`): that conversation.
  if (location.hash.length > 1) {
    const want = decodeURIComponent(location.hash.slice(1));
    history.replaceState(null, '', location.pathname + location.search);
    openNamed(want);
  }
  setTimeout(() => { if (!S.current && S.registered) select(getConv('*', 'server')); }, 1500);
  schedule('all');
}
function onIsupport(m) {
  for (const tok of m.params.slice(1, -1)) {
    if (tok[0] === '-') { S.isupport.delete(tok.slice(1).toUpperCase()); continue; }
    const eq = tok.indexOf('=');
    const k = (eq < 0 ? tok : tok.slice(0, eq)).toUpperCase();
    const v = eq < 0 ? '' : tok.slice(eq + 1).replace(/\\x([0-9a-f]{2})/gi, (_, x) => String.fromCharCode(parseInt(x, 16)));
    S.isupport.set(k, v);
    if (k === 'PREFIX') { const pm = /^\(([^)]*)\)(.*)$/.exec(v); if (pm) { S.prefixModes = pm[1]; S.prefixSyms = pm[2]; } }
    else if (k === 'CHANTYPES') S.chantypes = v || '#';
    else if (k === 'CASEMAPPING') S.casemap = v.toLowerCase();
    else if (k === 'CHANMODES') S.chanmodes = (v + ',,,').split(',');
    else if (k === 'CHATHISTORY') S.histMax = parseInt(v, 10) || 100;
    else if (k === 'NETWORK') S.network = v;
    else if (k === 'VAPID') { S.vapid = v; subscribePush(); }
    else if (k === 'SOJU.IM/FILEHOST' || k === 'DRAFT/FILEHOST') { try { S.filehost = new URL(v, location.href).href; } catch (e) { S.filehost = null; } }
  }
  schedule('all');
}

function onNumeric(m) {
  const p = m.params, n = m.command, last = p[p.length - 1] || '';
  switch (n) {
    case '001': onWelcome(m); serverLine(last); return;
    case '005': onIsupport(m); return;
    case '422': afterWelcome(); return;
    case '376': afterWelcome(); serverLine(last); return;
    case '375': case '372': serverLine(last); return;
    case '900': S.loggedIn = true; keepLogin(S.creds); serverLine(last); subscribePush(); return;
    case '903': case '907': capEnd(); return;
    case '902': case '904': case '905': case '906':
      if (!S.registered) authFail(/wrong account name or password/i.test(last) ? 'Wrong account name or password.' : 'Login failed: ' + last.replace(/^SASL authentication failed: /, ''));
      return;
    case '908': case '333': case '315': case '329': case '324': case '318': case '369': return;
    case '433':
      if (S.registered) return localLine('The nickname ' + (p[1] || '') + ' is taken.', 'error');
      S.nickNote = 'The nickname ' + (p[1] || S.tryNick) + ' is taken, so you are ' + (S.tryNick = (p[1] || S.tryNick) + '_') + '.';
      send('NICK', [S.tryNick]);
      $('login-error').textContent = S.nickNote;
      return;
    case '432':
      if (S.registered) return localLine('Nickname not accepted: ' + last, 'error');
      S.userQuit = true;
      closeSocket();
      showLogin('The server does not accept that nickname: ' + last);
      return;
    case '321': S.listing = []; return;
    case '322': if (S.listing && S.listing.length < 2000) S.listing.push([p[1] || '', p[2] || '0', last.replace(/^\[\+[^\]]*\] ?/, '')]); return;
    case '323': {
      const rooms = (S.listing || []).sort((a, b) => Number(b[1]) - Number(a[1]));
      S.listing = null;
      localLine(rooms.length ? 'Rooms on this server (' + rooms.length + '; click one, or /join #name, to go in):' : 'No rooms to list.');
      for (const [name, users, topic] of rooms) {
        // Each a line with the room's name as a button: a click joins it (or opens it, joined).
        const m = mkMsg('local', '', ' — ' + users + (users === '1' ? ' person' : ' people') + (topic ? ' — ' + topic : ''), {});
        m.room = name;
        addMsg(cur() || getConv('*', 'server'), m);
      }
      return;
    }
    case '331': case '332': { const c = findConv(p[1]); if (c) { c.topic = n === '332' ? p[2] || '' : ''; schedule('top'); } return; }
    case '353': onNames(m); return;
    case '366': namesEnd(p[1]); return;
    case '352': case '354': { // WHO / WHOX (%tcnf): H here, G gone (away)
      const [nick, flags] = n === '352' ? [p[5], p[6]] : [p[3], p[4]];
      if (nick && flags) { touchUser(nick).away = flags[0] === 'G'; schedule('members', 'sidebar'); }
      return;
    }
    case '305': case '306': S.away = n === '306'; localLine(S.away ? 'You are marked away.' : 'You are back.'); schedule('status'); return;
    case '301': {
      const c = findConv(p[1]);
      if (c && c.awayNoted !== last) { c.awayNoted = last; localLine(p[1] + ' is away: ' + last, 'local', c); }
      return;
    }
  }
  const code = Number(n);
  if (code >= 400 && code < 600) localLine((p.length > 2 ? p[1] + ': ' : '') + last, 'error');
  // WHOIS, in words (what /whois gets from the server).
  else if (n === '311') localLine((p[1] || '') + ' is ' + (p[2] || '') + '@' + (p[3] || '') + (last ? ' (' + last + ')' : ''));
  else if (n === '312') localLine((p[1] || '') + ' is on ' + (p[2] || '') + (last ? ' (' + last + ')' : ''));
  else if (n === '317') localLine((p[1] || '') + ' has been idle ' + Math.round(Number(p[2] || 0) / 60) + ' min');
  else if (n === '319') localLine((p[1] || '') + ' is in ' + last);
  else if (n === '330') localLine((p[1] || '') + ' is logged in as ' + (p[2] || ''));
  else if (n === '004') serverLine('This is ' + (p[1] || 'the server') + (p[2] ? ', running ' + p[2] : '') + '.');
  else if (n === '042') serverLine('Your unique ID on this network is ' + (p[1] || '?') + '.');
  // The rest in words: a reply's last parameter is its sentence (265's "Current local users 3,
  // max 5"); the ones before it are for programs. A reply without a sentence is left out.
  else if (p.length > 2 && /^\d+$/.test(p[1]) && !/\d/.test(last)) serverLine(p[1] + ' ' + last); // 252–254: "3 channels formed"
  else if (p.length > 1 && /\s/.test(last)) serverLine(last);
}
function onStandardReply(m) {
  const p = m.params, desc = p[p.length - 1] || '';
  if (p[0] === 'REGISTER') S.creating = null;
  if (p[0] === 'RESUME' && p[1] === 'FORGOTTEN') return;
  if (p[0] === 'RESUME' && S.creds && S.creds.token) {
    const account = S.creds.account;
    authFail('Your login has ended (signed out, a new password, or unused for 30 days): enter the password for ' + account + '.');
    $('account').value = account;
    return;
  }
  if (p[0] === 'RESUME') { setResumeToken(''); localLine('This tab\'s last visit could not be taken up again (more than a minute ago?): you joined anew.', 'local'); return; }
  if (p[0] === 'CHATHISTORY') {
    const c = findConv(p[3]);
    if (c) { c.hist = null; c.histDone = c.histNone = true; if (c === cur()) renderMessages('keep'); }
    if (p[1] === 'INVALID_TARGET') return; // no stored history for this conversation (a guest's direct messages)
  }
  localLine((m.command === 'FAIL' ? '' : m.command + ': ') + (p[0] && p[0] !== '*' ? p[0] + ': ' : '') + desc, m.command === 'NOTE' ? 'local' : 'error');
}

// ---------- rooms and people ----------
function onJoin(m) {
  const name = m.params[0], c = getConv(name, 'channel');
  if (isMe(m.nick)) {
    // The topic is the server's as it says after this JOIN (332), or none: not what it was before an outage.
    Object.assign(c, { name, joined: true, wasJoined: true, members: new Map(), topic: '' });
    schedule('top');
    if (S.pendingSelect === c.key) { S.pendingSelect = null; select(c); }
    else if (!S.current || S.current === '*') select(c);
    if (S.nickNote) { localLine(S.nickNote, 'local', c); S.nickNote = ''; }
    history(c, c.lastIso ? 'AFTER' : 'LATEST');
    sendHeld(c.key);
    send('WHO', S.isupport.has('WHOX') ? [name, '%tcnf,42'] : [name]);
  } else {
    touchUser(m.nick).away = false;
    c.members.set(fold(m.nick), { nick: m.nick, prefixes: '' });
    eventLine(c, m, LIVE);
  }
  schedule('sidebar', 'members');
}
function onPart(m) { // PART and KICK
  const c = findConv(m.params[0]);
  if (!c) return;
  const who = m.command === 'KICK' ? m.params[1] : m.nick;
  if (isMe(who) && m.command === 'PART') {
    S.convs.delete(c.key);
    if (S.current === c.key) select(nextConv(null));
  } else if (isMe(who)) Object.assign(c, { joined: false, wasJoined: false, members: new Map() });
  else c.members.delete(fold(who));
  if (!isMe(who) || m.command === 'KICK') eventLine(c, m, LIVE);
  schedule('members', 'sidebar');
}
function onQuit(m) {
  const k = fold(m.nick);
  for (const c of S.convs.values()) {
    if (c.members.delete(k) || (c.kind === 'dm' && c.key === k)) eventLine(c, m, LIVE);
    const t = c.typing.get(k);
    if (t) { clearTimeout(t.timer); c.typing.delete(k); }
  }
  schedule('members', 'status');
}
function onNick(m) {
  const to = m.params[0], k = fold(m.nick), nk = fold(to);
  if (isMe(m.nick)) { S.nick = S.wantNick = to; schedule('status'); }
  const u = S.users.get(k);
  if (u) { S.users.delete(k); u.nick = to; S.users.set(nk, u); }
  for (const c of [...S.convs.values()]) {
    const mem = c.members.get(k);
    if (mem) { c.members.delete(k); mem.nick = to; c.members.set(nk, mem); eventLine(c, m, LIVE); }
    else if (c.kind === 'dm' && c.key === k && !S.convs.has(nk)) { rekey(c, to); eventLine(c, m, LIVE); }
  }
  schedule('sidebar', 'members', 'top');
}
function rekey(c, name) {
  const was = c.key;
  S.convs.delete(was);
  c.key = fold(name);
  c.name = name;
  S.convs.set(c.key, c);
  if (S.current === was) S.current = c.key;
}
function onNames(m) {
  const c = findConv(m.params[2]);
  if (!c) return;
  c.names = c.names || new Map();
  for (const entry of (m.params[3] || '').split(' ')) {
    let i = 0;
    while (i < entry.length && S.prefixSyms.includes(entry[i])) i++;
    const nick = entry.slice(i).split('!')[0];
    if (nick) { touchUser(nick); c.names.set(fold(nick), { nick, prefixes: entry.slice(0, i) }); }
  }
}
function namesEnd(name) {
  const c = findConv(name);
  if (!c || !c.names) return;
  c.members = c.names;
  c.names = null;
  schedule('members', 'sidebar');
}
function onMode(m) {
  const c = isChannel(m.params[0]) && findConv(m.params[0]);
  if (!c) return;
  const args = m.params.slice(2);
  let sign = '+', ai = 0;
  for (const ch of m.params[1] || '') {
    if (ch === '+' || ch === '-') { sign = ch; continue; }
    const pi = S.prefixModes.indexOf(ch);
    const takesArg = pi >= 0 || S.chanmodes[0].includes(ch) || S.chanmodes[1].includes(ch) || (sign === '+' && S.chanmodes[2].includes(ch));
    const arg = takesArg ? args[ai++] : null;
    const mem = pi >= 0 && arg && c.members.get(fold(arg));
    if (!mem) continue;
    const sym = S.prefixSyms[pi];
    const pre = mem.prefixes.replace(sym, '') + (sign === '+' ? sym : '');
    mem.prefixes = [...pre].sort((a, b) => S.prefixSyms.indexOf(a) - S.prefixSyms.indexOf(b)).join('');
  }
  eventLine(c, m, LIVE);
  schedule('members');
}
function rank(mem) {
  const r = [...(mem && mem.prefixes) || ''].map((s) => S.prefixSyms.indexOf(s)).filter((i) => i >= 0);
  return r.length ? Math.min(...r) : 99;
}
function amOp(c) {
  const me = c && c.kind === 'channel' && c.members.get(fold(S.nick));
  const op = S.prefixModes.indexOf('o');
  return !!me && op >= 0 && rank(me) <= op;
}

// ---------- messages ----------
function mkMsg(kind, nick, text, tags, opt) {
  const t = tags.time ? Date.parse(tags.time) : NaN;
  const m = { id: tags.msgid || 'l' + ++S.localId, msgid: tags.msgid || '', kind, nick: nick || '', text: text || '',
    time: isNaN(t) ? Date.now() : t, iso: isNaN(t) ? '' : tags.time, self: isMe(nick),
    replyTo: tags['+draft/reply'] || tags['+reply'] || '', reactions: new Map(), redactedBy: '',
    fresh: !!(opt && opt.fresh), el: null, mention: false };
  m.counts = (kind === 'privmsg' || kind === 'action' || kind === 'notice') && !m.self;
  return m;
}
function mentionsMe(text) {
  const esc = S.nick.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return !!S.nick && new RegExp('(^|[^\\p{L}\\p{N}_])' + esc + '($|[^\\p{L}\\p{N}_])', 'iu').test(text);
}
function onMessage(m, c, ctx) {
  let text = m.params[1] || '', kind = m.command === 'NOTICE' ? 'notice' : 'privmsg';
  if (text[0] === '\x01') { // CTCP: only ACTION is shown
    const inner = text.slice(1).replace(/\x01$/, '');
    if (!/^ACTION( |$)/i.test(inner)) return;
    kind = 'action';
    text = inner.slice(7);
  }
  const msg = mkMsg(kind, isServerSource(m) ? '' : m.nick, text, m.tags, ctx);
  if (c.kind === 'server') msg.counts = false;
  msg.named = msg.counts && mentionsMe(text); // highlighted
  msg.mention = msg.named || (msg.counts && c.kind === 'dm'); // the ! in unread counts
  const t = ctx.live && c.typing.get(fold(m.nick));
  if (t) { clearTimeout(t.timer); c.typing.delete(fold(m.nick)); schedule('status'); }
  if (addMsg(c, msg, ctx.history) && ctx.live) { markRead(c); if (msg.mention) notifyOf(c, msg); }
}

// ---------- notifications ----------
// A direct message or a mention while the page is hidden (or not focused): a notification (the
// permission is asked, with a button, the first time one would show — never on load); the tab's
// title and icon carry the count either way.
const notifiable = () => 'Notification' in window;
function notifyOf(c, m) {
  if (!prefs.notify || !notifiable() || (focused() && c === cur())) return;
  if (Notification.permission === 'default') return askToNotify();
  if (Notification.permission !== 'granted' || focused()) return;
  const title = c.kind === 'dm' ? m.nick : m.nick + ' in ' + c.name;
  try {
    const n = new Notification(title, { body: firstWords(m.text, 200), tag: 'chat-tui:' + c.key, icon: '/icon-192.png' });
    n.onclick = () => { window.focus(); select(c); n.close(); };
  } catch (e) { /* a browser that wants notifications from its service worker only */ }
}
function askToNotify() {
  let declined = false;
  try { declined = localStorage.getItem('chat-tui.notify-asked') === 'no'; } catch (e) { /* storage off */ }
  if (!declined) $('notify-ask').hidden = false;
}
$('notify-yes').addEventListener('click', () => {
  $('notify-ask').hidden = true;
  Notification.requestPermission().then((answer) => {
    renderNotifyState();
    if (answer === 'granted') subscribePush();
    else localLine('The browser did not allow notifications for this page; its site settings can (the settings panel says how it stands).', 'error');
  });
});
$('notify-no').addEventListener('click', () => {
  $('notify-ask').hidden = true;
  try { localStorage.setItem('chat-tui.notify-asked', 'no'); } catch (e) { /* storage off */ }
});
// The tab's icon with a dot when something is for you (the title has the count).
let badgeShown = null;
function renderBadge(urgent) {
  if (badgeShown === urgent) return;
  badgeShown = urgent;
  const link = document.querySelector('link[rel="icon"]');
  if (!urgent) { link.href = 'icon-192.png'; return; }
  const img = new Image();
  img.onload = () => {
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 64;
    const g = canvas.getContext('2d');
    g.drawImage(img, 0, 0, 64, 64);
    g.fillStyle = '#e5484d';
    g.beginPath();
    g.arc(48, 16, 14, 0, 2 * Math.PI);
    g.fill();
    if (badgeShown) link.href = canvas.toDataURL('image/png');
  };
  img.src = 'icon-192.png';
}
// Web Push, for when no window is open: subscribed once notifications are allowed, on a server
// that offers it to an account (draft/webpush with its VAPID key).
function subscribePush() {
  if (!S.caps.has('draft/webpush') || !S.vapid || !S.loggedIn || !('serviceWorker' in navigator) || !prefs.notify) return;
  if (!notifiable() || Notification.permission !== 'granted') return;
  const key = Uint8Array.from(atob(S.vapid.replace(/-/g, '+').replace(/_/g, '/')), (ch) => ch.charCodeAt(0));
  navigator.serviceWorker.ready.then((reg) => reg.pushManager.getSubscription()
    .then((old) => old || reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key })))
    .then((sub) => {
      const j = sub.toJSON();
      if (j.endpoint && j.keys) send('WEBPUSH', ['REGISTER', j.endpoint, 'p256dh=' + j.keys.p256dh + ';auth=' + j.keys.auth]);
    }).catch((e) => console.warn('chat-tui: no push subscription', e));
}
function onTagmsg(m, c, ctx) {
  const tg = m.tags, parent = tg['+draft/reply'] || tg['+reply'];
  if ('+typing' in tg) { if (ctx.live && !isMe(m.nick)) gotTyping(c, m.nick, tg['+typing']); return; }
  if (parent && '+draft/react' in tg) react(c, parent, m.nick, tg['+draft/react'], true, ctx.history);
  if (parent && '+draft/unreact' in tg) react(c, parent, m.nick, tg['+draft/unreact'], false, ctx.history);
}
function onRedact(m, c) {
  const id = m.params[1], msg = id && c.byId.get(id);
  if (!msg) { if (id) c.pendRedact.set(id, m.nick); return; }
  msg.redactedBy = m.nick;
  msg.reactions.clear();
  refreshMsg(msg);
  for (const o of c.msgs) if (o.replyTo === id) refreshMsg(o);
  schedule('sidebar');
}
function react(c, parentId, nick, emoji, add, quiet) {
  if (!emoji || emoji.length > 32 || /[\s\x00-\x1f\x7f]/.test(emoji)) return;
  const msg = c.byId.get(parentId);
  if (!msg) {
    if (!c.pendReact.has(parentId)) c.pendReact.set(parentId, []);
    c.pendReact.get(parentId).push([nick, emoji, add]);
    return;
  }
  let who = msg.reactions.get(emoji);
  if (add) {
    if (!who) msg.reactions.set(emoji, (who = new Map()));
    who.set(fold(nick), nick);
  } else if (who) {
    who.delete(fold(nick));
    if (!who.size) msg.reactions.delete(emoji);
  }
  if (quiet) msg.el = null; else refreshMsg(msg);
}
function eventLine(c, m, ctx) {
  const p = m.params, n = m.nick;
  const text = {
    JOIN: () => '→ ' + n + ' joined',
    PART: () => '← ' + n + ' left' + (p[1] ? ' (' + p[1] + ')' : ''),
    QUIT: () => '← ' + n + ' quit' + (p[0] ? ' (' + p[0] + ')' : ''),
    NICK: () => n + ' is now ' + p[0],
    KICK: () => n + ' removed ' + p[1] + (p[2] && p[2] !== n ? ' (' + p[2] + ')' : ''),
    TOPIC: () => (p[1] ? n + ' set the topic: ' + p[1] : n + ' cleared the topic'),
    MODE: () => n + ' set mode ' + p.slice(1).join(' '),
  }[m.command]();
  const msg = mkMsg('event', n, text, m.tags, ctx);
  msg.ev = m.command;
  addMsg(c, msg, ctx.history);
}
// Inserts a message at its place in time (deduplicated by msgid); draws it if in view.
function addMsg(c, m, quiet) {
  if (m.msgid) {
    if (c.byId.has(m.msgid)) return null;
    c.byId.set(m.msgid, m);
  }
  const a = c.msgs, pos = S.batchPos && S.batchPos.conv === c ? S.batchPos : null;
  let i = a.length;
  if (pos && (pos.last >= 0 || pos.older)) {
    i = pos.last + 1;
    while (i < a.length && a[i].time < m.time) i++;
  } else while (i > 0 && a[i - 1].time > m.time) i--;
  if (pos) pos.last = i;
  a.splice(i, 0, m);
  if (m.iso && m.time >= c.lastTime) { c.lastTime = m.time; c.lastIso = m.iso; }
  if (m.msgid) {
    const pr = c.pendReact.get(m.msgid);
    if (pr) { c.pendReact.delete(m.msgid); for (const [n, e, add] of pr) react(c, m.msgid, n, e, add, true); }
    const by = c.pendRedact.get(m.msgid);
    if (by) { c.pendRedact.delete(m.msgid); m.redactedBy = by; m.reactions.clear(); }
    for (const o of a) if (o.replyTo === m.msgid && o.el && !o.quoteOk) refreshMsg(o);
  }
  if (!quiet && c === cur()) placeMsg(c, m, i);
  schedule('sidebar');
  if (c.kind === 'dm' && !S.loggedIn && isMsgKind(m)) keepGuestDMs();
  return m;
}

// A guest's direct conversations are not kept by the server (no account): this tab keeps their
// last lines (sessionStorage, gone with the tab or a sign-out), so a reload brings them back with
// what was unread. Bound: 20 conversations, 50 lines each.
let guestSave = null;
function keepGuestDMs() {
  if (!guestSave) guestSave = setTimeout(saveGuestDMs, 500);
}
// Leaving (a reload): written now, read positions included.
window.addEventListener('pagehide', () => { if (guestSave || (S.registered && !S.loggedIn)) saveGuestDMs(); });
function saveGuestDMs() {
  clearTimeout(guestSave);
  guestSave = null;
  if (S.loggedIn) return;
  const dms = [...S.convs.values()].filter((c) => c.kind === 'dm').slice(-20).map((c) => ({
    name: c.name, marker: c.marker == null ? null : c.marker,
    msgs: c.msgs.filter(isMsgKind).slice(-50).map((m) => ({ k: m.kind, n: m.nick, t: m.text, at: m.time, id: m.msgid, f: m.fresh, s: m.self })),
  }));
  try { sessionStorage.setItem('chat-tui.guest-dms', JSON.stringify(dms)); } catch (e) { /* storage off, or full */ }
}
function restoreGuestDMs() {
  let dms = [];
  try { dms = JSON.parse(sessionStorage.getItem('chat-tui.guest-dms') || '[]'); } catch (e) { return; }
  if (!Array.isArray(dms)) return;
  for (const d of dms.slice(-20)) {
    if (!d || typeof d.name !== 'string' || !Array.isArray(d.msgs)) continue;
    const c = getConv(d.name, 'dm');
    if (typeof d.marker === 'number') c.marker = d.marker;
    for (const x of d.msgs.slice(-50)) {
      if (!x || typeof x.t !== 'string' || typeof x.at !== 'number') continue;
      const m = mkMsg(['privmsg', 'action', 'notice'].includes(x.k) ? x.k : 'privmsg', String(x.n || ''), x.t,
        typeof x.id === 'string' && x.id ? { msgid: x.id } : {}, { fresh: !!x.f });
      m.time = x.at;
      m.self = !!x.s;
      m.counts = !m.self;
      m.mention = m.counts;
      addMsg(c, m, true);
    }
  }
  schedule('sidebar');
}

// ---------- drawing messages ----------
// IRC formatting is stripped; other control characters show as their pictures (␇), bidi overrides go.
function clean(text) {
  return String(text)
    .replace(/\x03(\d{1,2}(,\d{1,2})?)?/g, '')
    .replace(/\x04([0-9a-f]{6}(,[0-9a-f]{6})?)?/gi, '')
    .replace(/[\x02\x0f\x11\x16\x1d\x1e\x1f\u202a-\u202e\u2066-\u2069]/g, '')
    .replace(/[\x00-\x08\x0b-\x1f\x7f]/g, (ch) => String.fromCharCode(ch === '\x7f' ? 0x2421 : 0x2400 + ch.charCodeAt(0)));
}
function trimURL(u) {
  for (;;) {
    const last = u[u.length - 1], count = (ch) => u.split(ch).length;
    if (/[.,;:!?'"]/.test(last) || (last === ')' && count('(') < count(')')) || (last === ']' && count('[') < count(']'))) u = u.slice(0, -1);
    else return u;
  }
}
// A file held by this host: /files/ID/NAME on the upload address's port (whatever name the sharer used for the host).
function isFileURL(u) {
  try {
    const url = new URL(u), host = S.filehost && new URL(S.filehost);
    return !!host && url.port === host.port && /^\/files\/[0-9a-f]{24}\/[^/]+$/.test(url.pathname);
  } catch (e) { return false; }
}
function linkEl(u, text, download) {
  const a = h('a', download ? 'file-link' : null, text);
  a.href = u;
  a.rel = 'noopener noreferrer';
  a.target = '_blank';
  if (download && new URL(u).origin === location.origin) a.download = download === true ? '' : download;
  return a;
}
// Server text into parent as text nodes, and <a> for http(s) URLs only.
// An image uploaded through the host: a thumbnail the page draws itself from the file (fetched
// from the host only, never from elsewhere), decoded as an image or not shown; a click shows it
// whole. Owner: this page; bound: 40 kept (the oldest let go), files up to 16 MiB; end: the page.
const thumbs = new Map(); // url -> { small, full } object URLs
function thumbnail(parent, url, name) {
  const box = h('button', 'thumb');
  box.type = 'button';
  box.setAttribute('aria-label', 'Show ' + name + ' whole');
  box.hidden = true;
  parent.append(box);
  const show = (t) => {
    const img = h('img');
    img.src = t.small;
    img.alt = name;
    box.replaceChildren(img);
    box.hidden = false;
    box.onclick = () => showWhole(t.full, name);
  };
  if (thumbs.has(url)) return show(thumbs.get(url));
  fetch(url).then((r) => (r.ok ? r.blob() : Promise.reject(new Error(String(r.status)))))
    .then((blob) => (blob.size > 16 * 1048576 ? Promise.reject(new Error('too big')) : createImageBitmap(blob).then((bitmap) => [blob, bitmap])))
    .then(([blob, bitmap]) => {
      const scale = Math.min(1, 320 / bitmap.width, 240 / bitmap.height);
      const canvas = document.createElement('canvas');
      canvas.width = Math.max(1, Math.round(bitmap.width * scale));
      canvas.height = Math.max(1, Math.round(bitmap.height * scale));
      canvas.getContext('2d').drawImage(bitmap, 0, 0, canvas.width, canvas.height);
      bitmap.close();
      return new Promise((done) => canvas.toBlob((small) => done({ small: URL.createObjectURL(small), full: URL.createObjectURL(new Blob([blob], { type: 'image/' + (name.split('.').pop().toLowerCase().replace('jpg', 'jpeg')) })) }), 'image/png'));
    })
    .then((t) => {
      thumbs.set(url, t);
      if (thumbs.size > 40) { const [old, kept] = thumbs.entries().next().value; URL.revokeObjectURL(kept.small); URL.revokeObjectURL(kept.full); thumbs.delete(old); }
      show(t);
    })
    .catch(() => box.remove()); // not an image after all, or gone: the link stays
}
function showWhole(src, name) {
  const view = $('image-view');
  $('image-view-img').src = src;
  $('image-view-img').alt = name;
  view.showModal();
}
// IRC formatting as runs of [text, style]: bold ^B, italics ^], underline ^_, strike ^^,
// monospace ^Q, reverse ^V, colours ^C (foreground[,background], 0-15; 99 or none: the default),
// ^O ends them all; hex colours (^D) are dropped.
function formatRuns(raw) {
  const s = String(raw), runs = [];
  let style = {}, text = '';
  const flush = () => { if (text) runs.push([text, Object.assign({}, style)]); text = ''; };
  const flip = { '\x02': 'b', '\x1d': 'i', '\x1f': 'u', '\x1e': 's', '\x11': 'm', '\x16': 'r' };
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (flip[ch]) { flush(); style[flip[ch]] = !style[flip[ch]]; continue; }
    if (ch === '\x0f') { flush(); style = {}; continue; }
    if (ch === '\x03') {
      flush();
      const mt = /^(\d{1,2})(?:,(\d{1,2}))?/.exec(s.slice(i + 1, i + 6));
      if (!mt) { delete style.fg; delete style.bg; continue; }
      style.fg = +mt[1];
      if (mt[2] !== undefined) style.bg = +mt[2];
      i += mt[0].length;
      continue;
    }
    if (ch === '\x04') { flush(); const mt = /^[0-9a-f]{6}(,[0-9a-f]{6})?/i.exec(s.slice(i + 1, i + 15)); if (mt) i += mt[0].length; continue; }
    text += ch;
  }
  flush();
  return runs;
}
function runEl(parent, style) {
  const names = ['b', 'i', 'u', 's', 'm', 'r'].filter((k) => style[k]).map((k) => 'f-' + k);
  if (style.fg >= 0 && style.fg < 16) names.push('f' + style.fg);
  if (style.bg >= 0 && style.bg < 16) names.push('k' + style.bg);
  if (!names.length) return parent;
  const span = h('span', names.join(' '));
  parent.append(span);
  return span;
}
function renderText(parent, raw) {
  const text = clean(raw);
  const file = /^(.+) \((\d+(?:\.\d+)? (?:B|KiB|MiB|GiB|TiB))\) (https?:\/\/\S+)$/.exec(text);
  if (file && httpURL(file[3]) && isFileURL(file[3])) { // an upload to this host: "name (size) URL"
    parent.append(icon('clip'), ' ', linkEl(file[3], file[1], file[1]), ' (' + file[2] + ')');
    if (/\.(png|jpe?g|gif|webp|avif|bmp)$/i.test(file[1])) thumbnail(parent, file[3], file[1]);
    return;
  }
  for (const [part, style] of formatRuns(raw)) {
    const into = runEl(parent, style), shown = clean(part);
    let last = 0;
    // http(s) addresses, and www.name.tld ones (opened as https) as other chat programs do.
    for (const mt of shown.matchAll(/\bhttps?:\/\/[^\s<>"]+|(?<![\w.@/-])www\.[a-z0-9-]+(?:\.[a-z0-9-]+)+(?:[/?#][^\s<>"]*)?/gi)) {
      const text = trimURL(mt[0]), u = /^www\./i.test(text) ? 'https://' + text : text;
      if (!httpURL(u)) continue;
      into.append(shown.slice(last, mt.index), linkEl(u, text, isFileURL(u)));
      last = mt.index + text.length;
    }
    into.append(shown.slice(last));
  }
}
function nickColor(nick) {
  let x = 0;
  for (const ch of fold(nick)) x = (x * 31 + ch.codePointAt(0)) >>> 0;
  return 'c' + (x % 8);
}
const isMsgKind = (m) => m.kind === 'privmsg' || m.kind === 'action' || m.kind === 'notice';

function msgEl(m) {
  if (m.el) return m.el;
  const isMsg = isMsgKind(m);
  const li = h('li', isMsg ? 'message ' + m.kind : m.kind === 'event' ? 'event' : 'local ' + m.kind);
  li.classList.toggle('own', m.self);
  li.classList.toggle('mention', !!m.named);
  li.classList.toggle('held', !!m.held);
  li.dataset.msgid = m.msgid;
  if (m.nick) li.dataset.nick = m.nick;
  li.tabIndex = -1;
  if (isMsg && m.replyTo) {
    const c = cur(), parent = c && c.byId.get(m.replyTo);
    const gist = parent && (parent.redactedBy ? '(deleted)' : firstWords(parent.text, 60));
    m.quoteOk = !!parent;
    const q = button('quote', parent ? '↳ ' + parent.nick + ': ' + gist : '↳ a reply to an earlier message');
    q.tabIndex = -1; // keyboard: p on the message, or the toolbar
    q.setAttribute('aria-label', (parent ? 'In reply to ' + parent.nick + ': ' + gist : 'A reply to an earlier message') + '. Show it.');
    li.append(q);
    li.classList.add('has-quote');
  }
  const time = h('time', 'time', hhmm(m.time));
  time.dateTime = new Date(m.time).toISOString();
  time.title = new Date(m.time).toLocaleString();
  const body = h('div', 'body'), tx = h('span', 'text');
  tx.dir = 'auto';
  if (isMsg) body.append(h('span', 'nick ' + nickColor(m.nick || '?'), m.nick || S.info.name), ' ');
  if (m.redactedBy) { tx.classList.add('deleted'); tx.textContent = '(deleted by ' + m.redactedBy + ')'; li.classList.add('redacted'); }
  else renderText(tx, m.text);
  if (m.room) tx.prepend(button('room-link', m.room, 'Join ' + m.room));
  for (const a of tx.querySelectorAll('a')) a.tabIndex = -1; // in the Tab order only while their message has focus
  body.append(tx);
  if (m.reactions.size) {
    const rx = h('div', 'reactions');
    for (const [emoji, who] of m.reactions) {
      const mine = who.has(fold(S.nick));
      const names = [...who.values()].map((n) => (isMe(n) ? 'you' : n)).join(', ');
      const b = button('reaction' + (mine ? ' mine' : ''), emoji + ' ' + who.size);
      b.dataset.emoji = emoji;
      b.tabIndex = -1; // keyboard: e on the message toggles from the picker
      b.title = names;
      b.setAttribute('aria-pressed', String(mine));
      b.setAttribute('aria-label', emoji + ' ' + who.size + ': ' + names);
      rx.append(b);
    }
    body.append(rx);
  }
  li.append(time, ' ', body);
  msgOf.set(li, m);
  return (m.el = li);
}
function refreshMsg(m) {
  const old = m.el;
  m.el = null;
  if (!old || !old.parentNode) return;
  const n = msgEl(m), focused = old.contains(document.activeElement);
  old.replaceWith(n);
  if (focused) n.focus({ preventScroll: true });
  if (toolsMsg === m) attachTools(n);
}
function dayEl(t) {
  const li = h('li', 'day', new Date(t).toLocaleDateString(undefined, { weekday: 'long', day: 'numeric', month: 'long', year: 'numeric' }));
  li.setAttribute('role', 'separator');
  return li;
}
// Four or more people arriving and leaving in a row fold into one line that opens.
function eventGroup(run) {
  const count = (re) => run.filter((m) => re.test(m.ev)).length;
  const parts = [[count(/JOIN/), ' joined'], [count(/PART|QUIT|KICK/), ' left'], [count(/NICK/), ' renamed']].filter((x) => x[0]);
  const li = h('li', 'event group'), det = h('details'), list = h('ol'), sum = h('summary', 'text', '⇄ ' + parts.map((x) => x[0] + x[1]).join(', '));
  li.dataset.first = run[0].id;
  li.tabIndex = sum.tabIndex = -1; // keyboard: Up/Down in the messages reach the group, Enter opens it
  det.open = S.openGroups.has(run[0].id);
  det.addEventListener('toggle', () => { if (det.open) S.openGroups.add(run[0].id); else S.openGroups.delete(run[0].id); });
  det.append(sum, list);
  for (const m of run) list.append(msgEl(m));
  li.append(h('span', 'time', hhmm(run[0].time)), ' ', det);
  return li;
}

const box = $('messages');
const atBottom = () => box.scrollHeight - box.scrollTop - box.clientHeight < 48;
// At the bottom the list stays at the bottom whatever changes size — the window, the zoom, a
// reaction, an image, the typing line: every row and the list itself are watched.
const keepDown = new ResizeObserver(() => { if (S.stick) box.scrollTop = box.scrollHeight; });
function watchRows(rows) { for (const li of rows) keepDown.observe(li); }
keepDown.observe(box);
// Scrolled up, what arrives below is counted on a button that takes you down.
const newBelow = $('new-below');
function showBelow() {
  newBelow.hidden = !S.below;
  newBelow.textContent = S.below + (S.below === 1 ? ' new message ↓' : ' new messages ↓');
}
newBelow.addEventListener('click', () => {
  S.stick = true;
  S.below = 0;
  showBelow();
  box.scrollTop = box.scrollHeight;
  markRead(cur());
});
function renderMessages(mode) {
  const c = cur(), bottom = S.stick, fromBottom = box.scrollHeight - box.scrollTop, top = box.scrollTop;
  // What has focus, before building the fragment moves the elements out of the page.
  const focused = box.contains(document.activeElement) && document.activeElement !== box ? document.activeElement : null;
  const group = focused && focused.closest('li.group');
  const frag = document.createDocumentFragment();
  if (c) {
    if (c.histDone && !c.histNone && c.kind !== 'server') frag.append(h('li', 'day start', c.msgs.length ? 'The beginning of the conversation' : 'No messages yet'));
    let day = '', run = [], unreadShown = c.unreadFrom == null;
    const flushRun = () => { if (run.length >= 4) frag.append(eventGroup(run)); else for (const r of run) frag.append(msgEl(r)); run = []; };
    for (const m of c.msgs) {
      if (dayKey(m.time) !== day) { flushRun(); day = dayKey(m.time); frag.append(dayEl(m.time)); }
      if (!unreadShown && m.time > c.unreadFrom && m.counts) { flushRun(); unreadShown = true; frag.append(h('li', 'unread-line', 'New messages')); }
      if (m.replyTo && !m.quoteOk) m.el = null;
      if (/^(JOIN|PART|QUIT|NICK)$/.test(m.ev || '')) { run.push(m); continue; }
      flushRun();
      frag.append(msgEl(m));
    }
    flushRun();
  }
  box.setAttribute('aria-live', 'off'); // a redraw is not news
  box.replaceChildren(frag);
  keepDown.disconnect();
  keepDown.observe(box);
  watchRows(box.children);
  const again = focused && (box.contains(focused) ? focused : group && box.querySelector('li.group[data-first="' + group.dataset.first + '"]'));
  if (again) again.focus({ preventScroll: true });
  if (mode === 'bottom') { S.stick = true; S.below = 0; showBelow(); }
  if (mode === 'bottom' || (mode !== 'before' && bottom)) box.scrollTop = box.scrollHeight;
  else box.scrollTop = mode === 'before' ? box.scrollHeight - fromBottom : top;
  placeTools();
  setTimeout(() => box.setAttribute('aria-live', 'polite'), 0);
}
function placeMsg(c, m, i) {
  if (i !== c.msgs.length - 1) return renderMessages('keep');
  // A burst of arrivals and departures folds as it comes: the fourth in a row makes the group.
  if (/^(JOIN|PART|QUIT|NICK)$/.test(m.ev || '')) {
    let run = 0;
    for (let j = i; j >= 0 && run < 4 && /^(JOIN|PART|QUIT|NICK)$/.test(c.msgs[j].ev || '') && dayKey(c.msgs[j].time) === dayKey(m.time); j--) run++;
    if (run >= 4) return renderMessages('keep');
  }
  const bottom = S.stick, prev = c.msgs[i - 1];
  const start = box.querySelector('li.start');
  if (start && !prev) start.textContent = 'The beginning of the conversation'; // no longer "No messages yet"
  if (!prev || dayKey(prev.time) !== dayKey(m.time)) box.append(dayEl(m.time));
  const li = msgEl(m);
  box.append(li);
  keepDown.observe(li);
  if (bottom || m.self) { S.stick = true; box.scrollTop = box.scrollHeight; }
  else if (m.counts) { S.below++; showBelow(); }
  placeTools();
}
function jump(msgid) {
  const c = cur(), m = c && c.byId.get(msgid);
  if (!m) { // not loaded: ask for the messages around it
    if (!c || !S.caps.has('draft/chathistory') || c.hist) return localLine('That message is not loaded.');
    S.jumpTo = msgid;
    c.hist = { kind: 'AROUND', limit: 30 };
    send('CHATHISTORY', ['AROUND', c.name, 'msgid=' + msgid, 30]);
    return;
  }
  const li = msgEl(m), det = li.closest('details');
  if (det) det.open = true;
  if (!box.contains(li)) return;
  // Going to a message is the reader's move: the list leaves the bottom for it.
  S.readerAt = Date.now();
  S.stick = false;
  li.scrollIntoView({ block: 'center' });
  li.focus({ preventScroll: true });
  li.classList.remove('flash');
  void li.offsetWidth;
  li.classList.add('flash');
}

// ---------- the message toolbar ----------
// One toolbar outside the live log (moving it announces nothing), over the message in focus or
// under the pointer; in the Tab order right after the messages.
const pane = $('pane');
const tools = h('div', 'tools');
tools.setAttribute('role', 'toolbar');
tools.hidden = true;
const tReply = button('tool', '↩ Reply', 'Reply (r)');
const tReact = button('tool', '☺ React', 'React (e)');
const tParent = button('tool', '↑ Replied to', 'Show the message it replies to (p)');
const tDelete = button('tool', '', 'Delete (d)');
tDelete.append(icon('trash'), ' Delete');
const picker = h('div', 'picker');
picker.hidden = true;
tools.append(tReply, tReact, tParent, tDelete, picker);
pane.append(tools);
let toolsMsg = null;

function attachTools(li) {
  const m = li && msgOf.get(li);
  if (!m || !isMsgKind(m) || m.redactedBy || !m.msgid) {
    if (!tools.contains(document.activeElement)) { tools.hidden = true; toolsMsg = null; }
    return;
  }
  if (toolsMsg !== m) picker.hidden = true;
  toolsMsg = m;
  tReact.hidden = tReply.hidden = !S.caps.has('message-tags');
  tParent.hidden = !m.replyTo;
  tDelete.hidden = !mayDelete(m, cur());
  tools.setAttribute('aria-label', 'Actions for the message from ' + m.nick);
  placeTools();
}
function placeTools() {
  const li = toolsMsg && toolsMsg.el;
  if (!li || !box.contains(li) || !li.offsetParent) { if (!tools.contains(document.activeElement)) tools.hidden = true; return; }
  const top = box.offsetTop + li.getBoundingClientRect().top - box.getBoundingClientRect().top;
  tools.hidden = top + li.offsetHeight < 0 || top > box.clientHeight - 8;
  // Above the message; where there is no room above (its first line at the top, or a phone's
  // tools wrapped in two rows), below it: the message being acted on is never covered.
  const above = top - tools.offsetHeight + 6, below = top + li.offsetHeight - 6;
  tools.style.top = Math.max(0, above >= 0 || below + tools.offsetHeight > box.clientHeight ? above : below) + 'px';
}
function openPicker(m) {
  const emoji = [...new Set([...QUICK, ...m.reactions.keys()])];
  picker.replaceChildren(...emoji.map((e) => {
    const who = m.reactions.get(e), mine = !!(who && who.has(fold(S.nick)));
    const b = button('pick' + (mine ? ' mine' : ''), e, (mine ? 'Take back ' : 'React with ') + e);
    b.dataset.emoji = e;
    return b;
  }));
  picker.hidden = false;
  placeTools();
  picker.firstChild.focus();
}
pane.addEventListener('mouseover', (e) => {
  if (tools.contains(e.target) || tools.contains(document.activeElement)) return;
  const li = e.target.closest('li.message');
  if (li && (!toolsMsg || toolsMsg.el !== li)) attachTools(li);
});
pane.addEventListener('mouseleave', () => { if (!pane.contains(document.activeElement)) { tools.hidden = true; toolsMsg = null; } });
pane.addEventListener('focusout', (e) => {
  if (!e.relatedTarget || !pane.contains(e.relatedTarget)) { picker.hidden = tools.hidden = true; toolsMsg = null; }
});
box.addEventListener('focusin', (e) => {
  if (!e.target.matches('li.message, li.group')) return;
  attachTools(e.target);
  for (const a of e.target.querySelectorAll('.text a')) a.tabIndex = 0;
});
box.addEventListener('focusout', (e) => {
  const li = e.target.closest('li.message');
  if (li && !li.contains(e.relatedTarget)) for (const a of li.querySelectorAll('.text a')) a.tabIndex = -1;
});
box.addEventListener('click', (e) => {
  const li = e.target.closest('li'), m = li && msgOf.get(li);
  if (!m) return;
  if (e.target.closest('.quote')) jump(m.replyTo);
  if (e.target.closest('.room-link')) { // a room of /list: joined and taken into view
    const c = findConv(m.room);
    if (c && c.joined) select(c); else { S.pendingSelect = fold(m.room); send('JOIN', [m.room]); }
  }
  const rb = e.target.closest('.reaction');
  if (rb) toggleReaction(m, rb.dataset.emoji);
});
tools.addEventListener('click', (e) => {
  const m = toolsMsg, t = e.target.closest('button');
  if (!m || !t) return;
  if (t === tReply) startReply(m);
  else if (t === tReact) { if (picker.hidden) openPicker(m); else picker.hidden = true; }
  else if (t === tParent) jump(m.replyTo);
  else if (t === tDelete) deleteMsg(m);
  else if (t.dataset.emoji) { picker.hidden = true; toggleReaction(m, t.dataset.emoji); if (m.el) m.el.focus(); }
});
tools.addEventListener('keydown', (e) => {
  if (e.key !== 'Escape') return;
  e.preventDefault();
  if (!picker.hidden) { picker.hidden = true; tReact.focus(); } else if (toolsMsg && box.contains(toolsMsg.el)) toolsMsg.el.focus(); else input.focus();
});
// The message list: Up/Down pick a message; r reply, e react, 1-6 quick reactions, d delete, p the replied one.
box.addEventListener('keydown', (e) => {
  const t = e.target;
  if (e.key === 'Escape') { e.preventDefault(); input.focus(); return; }
  if (t !== box && !t.matches('li.message, li.group')) return;
  if (t.matches('li.group') && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); const det = t.querySelector('details'); det.open = !det.open; return; }
  const items = [...box.querySelectorAll('li.message, li.group')], idx = items.indexOf(t), lastOne = items[items.length - 1];
  const next = { ArrowUp: idx < 0 ? lastOne : items[idx - 1], ArrowDown: idx < 0 ? lastOne : items[idx + 1],
    Home: t !== box && items[0], End: t !== box && lastOne }[e.key];
  if (next) { e.preventDefault(); next.focus(); next.scrollIntoView({ block: 'nearest' }); return; }
  if (e.key === 'ArrowDown' && idx === items.length - 1) { e.preventDefault(); input.focus(); return; }
  const m = msgOf.get(t);
  if (!m || e.ctrlKey || e.metaKey || e.altKey) return;
  const act = { r: () => startReply(m), Enter: () => startReply(m), e: () => openPicker(m), '+': () => openPicker(m),
    p: () => m.replyTo && jump(m.replyTo), d: () => deleteMsg(m), Delete: () => deleteMsg(m) }[e.key];
  if (act) { e.preventDefault(); attachTools(t); act(); }
  else if (/^[1-6]$/.test(e.key)) { e.preventDefault(); toggleReaction(m, QUICK[e.key - 1]); }
});
for (const kind of ['wheel', 'touchmove', 'keydown', 'pointerdown']) box.addEventListener(kind, () => { S.readerAt = Date.now(); }, { passive: true });
box.addEventListener('scroll', () => {
  placeTools();
  // The reader leaves the bottom by scrolling up; the list moving under a resize, a zoom or a
  // growing row (the browser keeps what is shown in place) does not take them away from it.
  // Only the reader (wheel, touch, keys, the scroll bar) takes the list off the bottom; the
  // list moving under a resize, a zoom, a phone's screen or a growing row does not.
  if (atBottom()) S.stick = true;
  else if (box.scrollTop < S.lastTop && Date.now() - S.readerAt < 1000) S.stick = false;
  else if (S.stick) box.scrollTop = box.scrollHeight;
  S.lastTop = box.scrollTop;
  if (S.stick && S.below) { S.below = 0; showBelow(); }
  const c = cur();
  if (c && box.scrollTop < 120 && !c.histDone) history(c, 'BEFORE');
  if (c && atBottom()) markRead(c);
});

// ---------- read markers and unread counts ----------
function onMarkread(m) {
  const c = findConv(m.params[0]), t = Date.parse((m.params[1] || '').replace(/^timestamp=/, ''));
  if (c && !isNaN(t)) { c.marker = Math.max(c.marker || 0, t); schedule('sidebar'); }
  // A direct conversation never read on any device: all of it is unread (a reload keeps its "1!").
  else if (c && m.params[1] === '*' && c.kind === 'dm' && c.marker == null) { c.marker = 0; schedule('sidebar'); }
}
// Unread: messages from others after the read marker; with no marker, those that came since connecting.
function unreadOf(c) {
  let n = 0, mention = false;
  for (let i = c.msgs.length - 1, seen = 0; i >= 0 && seen < 2000; i--, seen++) {
    const m = c.msgs[i];
    if (c.marker != null && m.time <= c.marker) break;
    if (!m.counts || m.redactedBy || (c.marker == null && !m.fresh)) continue;
    n++;
    mention = mention || m.mention;
  }
  return { n, mention };
}
const focused = () => document.hasFocus() && !document.hidden;
function markRead(c) {
  if (!c || c !== cur() || !focused() || !atBottom()) return;
  const last = c.msgs.filter((m) => m.kind !== 'local' && m.kind !== 'error').pop();
  if (!last || (c.marker != null && c.marker >= last.time)) return;
  c.marker = last.time;
  if (last.iso && c.kind !== 'server' && S.caps.has('draft/read-marker')) send('MARKREAD', [c.name, 'timestamp=' + last.iso]);
  schedule('sidebar');
}
window.addEventListener('focus', () => markRead(cur()));
document.addEventListener('visibilitychange', () => markRead(cur()));

// ---------- typing ----------
function gotTyping(c, nick, state) {
  const k = fold(nick), old = c.typing.get(k);
  if (old) clearTimeout(old.timer);
  if (state === 'active' || state === 'paused') {
    c.typing.set(k, { nick, state, timer: setTimeout(() => { c.typing.delete(k); schedule('status'); }, state === 'active' ? 6000 : 30000) });
  } else c.typing.delete(k);
  schedule('status');
}
function sendTyping(state, target) {
  const T = S.typing;
  if (!prefs.typing && state === 'active') return;
  target = target || T.target;
  if (!target) return;
  if (state !== 'active') {
    clearTimeout(T.timer);
    if (T.state === state || !T.state || T.state === 'done') return;
  }
  send('TAGMSG', [target], { '+typing': state });
  Object.assign(T, { state, target: state === 'done' ? null : target, last: Date.now() });
}
// active at most every 3 s while a message is written, paused after 5 s still, done when cleared or sent.
function typingInput() {
  const c = cur(), T = S.typing, v = input.value;
  if (T.target && (!c || fold(T.target) !== c.key)) sendTyping('done');
  if (!c || c.kind === 'server' || !S.caps.has('message-tags') || !S.registered) return;
  if (v.trim() && !(v[0] === '/' && v[1] !== '/')) {
    if (T.state !== 'active' || Date.now() - T.last > 3000) sendTyping('active', c.name);
    clearTimeout(T.timer);
    T.timer = setTimeout(() => sendTyping('paused'), 5000);
  } else sendTyping('done');
}

// ---------- sending ----------
// Pieces of at most `max` bytes that join back into `text` exactly (a cut at a space keeps the
// space at the start of the next piece), for multiline-concat; `splitText` drops those spaces.
function splitExact(text, max) {
  const out = [];
  while (byteLen(text) > max) {
    let cut = 0, bytes = 0;
    for (const ch of text) { bytes += byteLen(ch); if (bytes > max) break; cut += ch.length; }
    const sp = text.lastIndexOf(' ', cut - 1);
    const at = sp > cut / 2 ? sp : cut;
    out.push(text.slice(0, at));
    text = text.slice(at);
  }
  out.push(text);
  return out;
}
const splitText = (text, max) => splitExact(text, max).map((piece, k) => (k ? piece.replace(/^ /, '') : piece));
function privmsg(target, text, opts) {
  opts = opts || {};
  const c = getConv(target), echo = S.caps.has('echo-message');
  const tags = opts.replyTo && S.caps.has('message-tags') ? { '+draft/reply': opts.replyTo, '+reply': opts.replyTo } : null;
  const max = Math.max(120, 510 - byteLen(':' + S.nick + '!web@ PRIVMSG ' + target + ' :') - 80 - (opts.action ? 9 : 0));
  const lines = text.split('\n');
  const ml = S.offered.get('draft/multiline') || '', limit = (k, d) => Number((new RegExp(k + '=(\\d+)').exec(ml) || [])[1] || d);
  if (!opts.action && lines.length > 1 && S.caps.has('draft/multiline') && S.caps.has('batch') && lines.length <= limit('max-lines', 100) &&
      byteLen(text) <= limit('max-bytes', 4096) && lines.every((l) => byteLen(l) <= max)) {
    const id = 'ml' + Date.now().toString(36);
    send('BATCH', ['+' + id, 'draft/multiline', target], tags);
    for (const l of lines) send('PRIVMSG', [target, l], { batch: id });
    send('BATCH', ['-' + id]);
    if (!echo) addMsg(c, mkMsg('privmsg', S.nick, text, tags || {}));
    return;
  }
  // One long line: where the server takes multiline messages, its parts go as one message
  // (draft/multiline-concat joins them again); elsewhere every part but the last ends in "…".
  const parts = lines.length === 1 ? splitExact(lines[0], max) : null;
  if (!opts.action && parts && parts.length > 1 && S.caps.has('draft/multiline') && S.caps.has('batch') &&
      parts.length <= limit('max-lines', 100) && byteLen(text) <= limit('max-bytes', 4096)) {
    const id = 'ml' + Date.now().toString(36);
    send('BATCH', ['+' + id, 'draft/multiline', target], tags);
    parts.forEach((part, k) => send('PRIVMSG', [target, part], k ? { batch: id, 'draft/multiline-concat': '' } : { batch: id }));
    send('BATCH', ['-' + id]);
    if (!echo) addMsg(c, mkMsg('privmsg', S.nick, text, tags || {}));
    return;
  }
  let t = tags;
  for (const l of lines) {
    const split = l ? splitText(l, max - 4) : [];
    for (const [k, piece] of split.entries()) {
      const part = k < split.length - 1 ? piece + ' …' : piece;
      send('PRIVMSG', [target, opts.action ? '\x01ACTION ' + part + '\x01' : part], t);
      if (!echo) addMsg(c, mkMsg(opts.action ? 'action' : 'privmsg', S.nick, part, t || {}));
      t = null;
    }
  }
}
function sendReaction(m, emoji, add) {
  const c = cur();
  if (!c || !m.msgid || !S.caps.has('message-tags')) return localLine('Reactions need a server with message tags.', 'error');
  send('TAGMSG', [c.name], { [add ? '+draft/react' : '+draft/unreact']: emoji, '+draft/reply': m.msgid, '+reply': m.msgid });
  if (!S.caps.has('echo-message')) react(c, m.msgid, S.nick, emoji, add);
}
function toggleReaction(m, emoji) {
  const who = m.reactions.get(emoji);
  sendReaction(m, emoji, !(who && who.has(fold(S.nick))));
}
// Deleting works for your own messages (in a direct conversation only with an account: the
// server keeps no record of a guest's) and for anyone's in a room you run.
function mayDelete(m, c) {
  if (!c || !m || !m.msgid || !S.caps.has('draft/message-redaction')) return false;
  if (c.kind === 'channel') return m.self || amOp(c);
  return m.self && S.loggedIn;
}
function deleteMsg(m) {
  const c = cur();
  if (!S.caps.has('draft/message-redaction')) return localLine('This server does not support deleting messages.', 'error');
  if (!mayDelete(m, c)) return localLine(c && c.kind === 'dm' && m.self ? 'Messages in a direct conversation can be deleted with an account only.' : 'Only your own messages can be deleted here.', 'error');
  // Asked in the page, above the input (y deletes, n or Escape keeps), not in a browser dialog.
  S.confirming = { conv: c.key, msgid: m.msgid };
  $('confirm-text').textContent = 'Delete ' + (m.self ? 'your' : m.nick + '\'s') + ' message "' + firstWords(m.text, 40) + '"? It goes for everyone whose client understands deletions.';
  $('confirm-bar').hidden = false;
  $('confirm-yes').focus();
}
function answerDelete(yes) {
  const ask = S.confirming, c = ask && S.convs.get(ask.conv);
  S.confirming = null;
  $('confirm-bar').hidden = true;
  if (yes && c) send('REDACT', [c.name, ask.msgid]);
  input.focus();
}
function startReply(m) {
  if (!m || !m.msgid) return localLine('That message cannot be replied to.', 'error');
  S.reply = { conv: S.current, msgid: m.msgid };
  $('reply-text').textContent = 'Replying to ' + m.nick + ': ' + firstWords(m.text, 60);
  $('reply-bar').hidden = false;
  input.focus();
}
function cancelReply() { S.reply = null; $('reply-bar').hidden = true; }
// What /reply and /react act on: the message being replied to, else the last one from someone
// else; /delete: your own last one.
function targetMsg(own) {
  const c = cur();
  if (!c) return null;
  if (!own && S.reply && S.reply.conv === S.current) return c.byId.get(S.reply.msgid) || null;
  for (let i = c.msgs.length - 1; i >= 0; i--) {
    const m = c.msgs[i];
    if (m.msgid && !m.redactedBy && (m.kind === 'privmsg' || m.kind === 'action') && m.self === own) return m;
  }
  return null;
}

// ---------- /commands ----------
const COMMANDS = {
  join: ['#room [key]', 'join a room', (a) => {
    if (!a[0]) return usage('join');
    const room = isChannel(a[0]) ? a[0] : S.chantypes[0] + a[0], c = findConv(room);
    if (c && c.joined) return select(c);
    S.pendingSelect = fold(room);
    send('JOIN', a[1] ? [room, a[1]] : [room]);
  }],
  part: ['[#room] [reason]', 'leave a room (this one without a name)', (a, rest) => {
    const c = cur(), named = isChannel(a[0]);
    const room = named ? a[0] : c && c.kind === 'channel' ? c.name : '';
    if (!room) return localLine('Which room? /part #room', 'error');
    const reason = named ? rest.slice(a[0].length).trim() : rest;
    send('PART', reason ? [room, reason] : [room]);
  }],
  msg: ['nick text', 'send a direct message', (a, rest) => {
    if (a.length < 2) return usage('msg');
    if (!S.registered) return;
    privmsg(a[0], rest.slice(a[0].length).trim());
    if (!isChannel(a[0])) openDM(a[0]);
  }],
  query: ['nick [text]', 'open a direct conversation', (a, rest) => {
    if (!a[0]) return usage('query');
    openDM(a[0]);
    if (rest.slice(a[0].length).trim()) privmsg(a[0], rest.slice(a[0].length).trim());
  }],
  me: ['action', 'an action: * you waves', (a, rest) => { const c = sendable(); if (c && rest) privmsg(c.name, rest, { action: true }); }],
  nick: ['newname', 'change your nickname', (a) => { if (!a[0]) return usage('nick'); S.wantNick = a[0]; send('NICK', [a[0]]); }],
  topic: ['[text]', 'show or set the room topic', (a, rest) => {
    const c = cur();
    if (!c || c.kind !== 'channel') return localLine('Topics belong to rooms.', 'error');
    if (rest) send('TOPIC', [c.name, rest]); else localLine(c.topic ? 'Topic: ' + c.topic : 'No topic is set.');
  }],
  away: ['[text]', 'mark yourself away', (a, rest) => { S.awayText = rest || 'away'; send('AWAY', [S.awayText]); }],
  back: ['', 'you are back', () => { S.awayText = ''; send('AWAY', []); }],
  reply: ['[text]', 'reply to the last message (r on a message in the list: that one)', (a, rest) => {
    const m = targetMsg(false), c = sendable();
    if (!c) return;
    if (!m) return localLine('No message to reply to.', 'error');
    if (!rest) return startReply(m);
    privmsg(c.name, rest, { replyTo: m.msgid });
    cancelReply();
  }],
  react: ['emoji', 'react to the message you reply to, or the last one (again: take it back)', (a) => {
    const m = targetMsg(false);
    if (!a[0]) return usage('react');
    if (!m) return localLine('No message to react to.', 'error');
    toggleReaction(m, a[0]);
  }],
  delete: ['', 'delete your last message (d on a message in the list: that one)', () => {
    const m = targetMsg(true);
    if (!m) return localLine('No message of yours to delete.', 'error');
    deleteMsg(m);
  }],
  close: ['', 'close this direct conversation', () => {
    const c = cur();
    if (!c || c.kind !== 'dm') return localLine('/close closes direct conversations; for rooms it is /part.', 'error');
    S.convs.delete(c.key);
    select(nextConv(null));
  }],
  search: ['words', 'search the history you may read (the server does; the search button (magnifier) too)', (a, rest) => openSearch(rest)],
  quote: ['IRC LINE', 'send a raw IRC line', (a, rest) => { if (!rest) return usage('quote'); if (S.ws) S.ws.send(rest.replace(/[\r\n]/g, ' ')); }],
  quit: ['[reason]', 'leave the chat', (a, rest) => {
    S.userQuit = true;
    keepLogin(null);
    if (S.creds) send('RESUME', ['FORGET']); // this tab's login token ends with it
    send('QUIT', [rest || 'leaving']);
    setTimeout(() => { closeSocket(); setConn('offline'); showLogin('You left the chat.'); }, 300);
  }],
  help: ['', 'this list', () => {
    localLine('Commands (//text sends "/text" as it is):');
    for (const [name, [args, help]] of Object.entries(COMMANDS)) localLine('/' + name + (args ? ' ' + args : '') + ' — ' + help);
    localLine('Keys: Alt+Up/Down switch conversation · Tab completes a nickname · Escape cancels a reply · in the messages, Up/Down pick one: r replies, e reacts, d deletes.');
    localLine(S.filehost ? 'Files: the paper-clip button beside the input, or drop a file on the conversation: it is kept by the host and its link sent here (images show a preview).'
      : 'Files: this server keeps no files, so the paper-clip button is not shown.');
    localLine('Settings (theme, notifications, typing, compact lines, nickname colours, time): the gear button at the top.');
  }],
};
const ALIASES = { j: 'join', leave: 'part', q: 'query', raw: 'quote', exit: 'quit', m: 'msg' };
function usage(name) { localLine('Usage: /' + name + ' ' + COMMANDS[name][0], 'error'); }
function sendable() {
  const c = cur();
  if (!c || c.kind === 'server') return localLine('Pick a room or a person first (or /join #room, /msg nick text).', 'error');
  if (!S.registered && S.everRegistered && !S.userQuit && (c.kind === 'dm' || c.wasJoined)) return { held: c };
  if (!S.registered) return localLine('Not connected; your line stays in the input until the connection is back.', 'error');
  if (c.kind === 'channel' && !c.joined) return localLine('You are not in ' + c.name + '; /join ' + c.name + ' to come back.', 'error');
  return c;
}
// One line from the input; true when it was used (the input is then cleared).
function submit(text) {
  if (!text.trim()) return false;
  if (text[0] === '/' && text[1] !== '/') {
    const sp = text.search(/\s/), name = (sp < 0 ? text.slice(1) : text.slice(1, sp)).toLowerCase();
    const rest = sp < 0 ? '' : text.slice(sp + 1).trim(), cmd = COMMANDS[name] || COMMANDS[ALIASES[name]];
    if (!cmd) {
      // Not one of the page's: the server's own command (/whois, /mode, /kick…), as The Lounge sends them.
      if (!S.registered) { localLine('Not connected yet; try again when the status line says connected.', 'error'); return false; }
      if (!/^[a-z][a-z0-9]*$/.test(name)) { localLine('Unknown command /' + name + ' — /help lists them (//' + name + ' sends the text as it is).', 'error'); return true; }
      const words = rest ? rest.split(/\s+/) : [];
      // The words as parameters, the last one taking the rest of the line when it has spaces.
      const params = words.length > 1 ? [...words.slice(0, -1)] : words;
      if (words.length > 1) params.push(rest.slice(rest.lastIndexOf(words[words.length - 1])));
      send(name.toUpperCase(), params);
      return true;
    }
    if (!S.registered && name !== 'help') { localLine('Not connected yet; try again when the status line says connected.', 'error'); return false; }
    cmd[2](rest ? rest.split(/\s+/) : [], rest);
    return true;
  }
  const c = sendable();
  if (!c) return false;
  if (c.held) return hold(c.held, text.startsWith('//') ? text.slice(1) : text);
  privmsg(c.name, text.startsWith('//') ? text.slice(1) : text, { replyTo: S.reply && S.reply.conv === c.key ? S.reply.msgid : null });
  cancelReply();
  return true;
}

// A line typed during an outage: shown as held where it was typed, sent once when the
// connection is back (a room's once we are in it again).
function hold(c, text) {
  if (S.held.length >= 50) { localLine('50 lines are waiting for the connection already; this one stays in the input.', 'error'); return false; }
  const note = mkMsg('local', '', '(held) ' + text + ' — sent when the connection is back', {});
  note.held = true;
  addMsg(c, note);
  S.held.push({ key: c.key, name: c.name, text, note, reply: S.reply && S.reply.conv === c.key ? S.reply.msgid : null });
  cancelReply();
  schedule('status');
  return true;
}
function sendHeld(key) {
  const now = S.held.filter((h) => key === null ? findConv(h.name) && findConv(h.name).kind === 'dm' : h.key === key);
  if (!now.length) return;
  S.held = S.held.filter((h) => !now.includes(h));
  for (const h of now) {
    const c = findConv(h.name);
    if (c) { c.msgs = c.msgs.filter((m) => m !== h.note); if (c === cur()) renderMessages('keep'); }
    privmsg(h.name, h.text, { replyTo: h.reply });
  }
  schedule('status');
}

// ---------- conversations ----------
function select(c) {
  const prev = cur();
  if (prev && prev !== c) prev.draft = input.value;
  S.current = c ? c.key : null;
  // Kept for this tab: a reload comes back to it.
  try { if (c) sessionStorage.setItem('chat-tui.current', c.key); } catch (e) { /* storage off */ }
  toolsMsg = null;
  tools.hidden = true;
  if (S.reply && S.reply.conv !== S.current) cancelReply();
  if (prev !== c) { input.value = (c && c.draft) || ''; autosize(); }
  typingInput();
  // Where the reader stopped: a "new messages" line above what came after their read marker.
  if (prev !== c && c) c.unreadFrom = unreadOf(c).n > 0 && c.marker != null ? c.marker : null;
  renderMessages('bottom');
  renderAll();
  if (c) { markRead(c); moreHistory(c); }
}
function openDM(nick) {
  if (isMe(nick)) return;
  const c = getConv(nick, 'dm');
  select(c);
  if (!c.msgs.length) history(c, 'LATEST');
  if (S.caps.has('draft/read-marker') && !c.markerAsked) { c.markerAsked = true; send('MARKREAD', [c.name]); }
  closeDrawer();
  input.focus();
}
function convOrder() {
  const all = [...S.convs.values()], byName = (a, b) => fold(a.name).localeCompare(fold(b.name));
  return ['channel', 'dm', 'server'].flatMap((k) => all.filter((c) => c.kind === k).sort((a, b) => (b.joined - a.joined) || byName(a, b)));
}
function nextConv(c, dir, wrap) {
  const all = convOrder(), i = c ? all.indexOf(c) : -1;
  if (i < 0) return all[0] || null;
  return wrap ? all[(i + dir + all.length) % all.length] : all[Math.max(0, Math.min(all.length - 1, i + dir))];
}

// ---------- drawing the rest ----------
const dirty = new Set();
let flushTimer = 0;
function schedule(...what) {
  for (const w of what) dirty.add(w);
  if (!flushTimer) flushTimer = setTimeout(flush, 20);
}
function flush() {
  flushTimer = 0;
  const all = dirty.has('all');
  if (all || dirty.has('sidebar')) renderSidebar();
  if (all || dirty.has('members')) renderMembers();
  if (all || dirty.has('top')) renderTop();
  renderStatus();
  dirty.clear();
}
function renderAll() { dirty.add('all'); flush(); }

function renderSidebar() {
  const ul = $('conversations'), hadFocus = ul.contains(document.activeElement);
  let firstDM = true, total = 0, mentions = false;
  const items = convOrder().map((c) => {
    if (!c.li) {
      c.li = h('li');
      c.li.setAttribute('role', 'option');
      c.li.append(h('span', 'name'), h('span', 'badge'));
      convOf.set(c.li, c);
    }
    const li = c.li, sel = c === cur(), { n, mention } = unreadOf(c), u = c.kind === 'dm' && user(c.name);
    const name = c.kind === 'server' ? '(server)' : c.name;
    if (!sel || !focused()) { total += n; mentions = mentions || mention; }
    li.className = 'conv ' + c.kind + (c.kind === 'channel' && !c.joined ? ' left' : '') + (n ? ' unread' : '') +
      (mention ? ' mention' : '') + (u && u.away ? ' away' : '') + (c.kind === 'dm' && firstDM ? ' first-dm' : '');
    if (c.kind === 'dm') firstDM = false;
    li.dataset.target = c.kind === 'server' ? '*' : c.name;
    li.firstChild.textContent = name;
    li.lastChild.textContent = n ? n + (mention ? '!' : '') : '';
    li.setAttribute('aria-selected', String(sel));
    li.tabIndex = sel ? 0 : -1;
    li.setAttribute('aria-label', name + (c.kind === 'dm' ? ', direct conversation' : '') + (li.classList.contains('left') ? ', left' : '') +
      (n ? ', ' + n + ' unread' : '') + (mention ? ', mentions you' : ''));
    return li;
  });
  if (!cur() && items[0]) items[0].tabIndex = 0;
  if (items.length !== ul.children.length || items.some((li, i) => ul.children[i] !== li)) ul.replaceChildren(...items);
  if (hadFocus && !ul.contains(document.activeElement)) { const c = cur(); (c && c.li ? c.li : items[0])?.focus(); }
  const c = cur();
  document.title = (total ? '(' + total + (mentions ? '!' : '') + ') ' : '') + (c ? (c.kind === 'server' ? S.info.name : c.name) + ' — ' : '') + (S.network || 'chat-tui');
  $('menu-badge').textContent = total ? ' ' + total : '';
  renderBadge(!!mentions);
  $('menu-button').setAttribute('aria-label', 'Rooms and people' + (total ? ', ' + total + ' unread' : ''));
}

function renderMembers() {
  const ul = $('members'), c = cur(), heading = $('members-heading');
  const active = ul.contains(document.activeElement) ? fold(document.activeElement.dataset.nick) : null;
  let list = [];
  if (c && c.kind === 'channel') {
    list = [...c.members.values()].sort((a, b) => (rank(a) - rank(b)) || fold(a.nick).localeCompare(fold(b.nick)));
    heading.textContent = 'People in ' + c.name + ' (' + list.length + ')';
  } else if (c && c.kind === 'dm') {
    list = [{ nick: c.name, prefixes: '' }, { nick: S.nick, prefixes: '' }];
    heading.textContent = 'Direct conversation';
  } else heading.textContent = 'People';
  const want = active || S.memberFocus;
  const fi = Math.max(0, list.findIndex((m) => fold(m.nick) === want));
  const items = list.map((mem, i) => {
    const u = user(mem.nick), me = isMe(mem.nick), sym = mem.prefixes[0] || '', away = u && u.away;
    const li = h('li', 'member' + (away ? ' away' : '') + (me ? ' me' : ''));
    li.setAttribute('role', 'option');
    li.setAttribute('aria-selected', 'false');
    li.dataset.nick = mem.nick;
    li.tabIndex = i === fi ? 0 : -1;
    li.append(h('span', 'prefix', sym || ' '), h('span', 'mnick ' + nickColor(mem.nick), mem.nick));
    if (me) li.append(h('span', 'you', '(you)'));
    li.setAttribute('aria-label', mem.nick + (sym === '@' ? ', operator' : sym === '+' ? ', voiced' : sym ? ', ' + sym : '') +
      (away ? ', away' + (u.awayMsg ? ': ' + u.awayMsg : '') : '') + (me ? ', you' : ''));
    if (away && u.awayMsg) li.title = 'away: ' + u.awayMsg;
    return li;
  });
  ul.replaceChildren(...items);
  if (active && items[fi]) items[fi].focus();
}

function renderTop() {
  const c = cur(), title = $('conv-title'), topic = $('topic');
  topic.replaceChildren();
  topic.className = '';
  title.textContent = !c ? S.network || S.info.name : c.kind === 'server' ? S.info.name + ' (server)' : c.name;
  if (!c) return;
  const u = c.kind === 'dm' && user(c.name);
  if (c.kind === 'server') topic.textContent = 'Messages from the server';
  else if (c.kind === 'dm') topic.textContent = 'Direct conversation' + (u && u.away ? ' · away' + (u.awayMsg ? ': ' + clean(u.awayMsg) : '') : '');
  else if (c.topic) renderText(topic, c.topic);
  else { topic.textContent = c.joined || (!S.registered && c.wasJoined) ? 'No topic' : 'You are not in this room'; topic.className = 'empty'; }
}

const retryIn = () => Math.max(1, Math.ceil((S.retryAt - Date.now()) / 1000));
// An outage in words, over the conversation: what happened, when the next try is, a way to try now.
function renderBanner() {
  const lost = S.everRegistered && !S.userQuit && S.conn !== 'connected';
  const banner = $('banner');
  banner.hidden = !lost;
  $('members').classList.toggle('stale', lost);
  if (!lost) return;
  const held = S.held.length ? ' · ' + S.held.length + (S.held.length === 1 ? ' line' : ' lines') + ' to send when it is back' : '';
  $('banner-text').textContent = (S.retryTimer ? 'Connection lost — retrying in ' + retryIn() + ' s' : 'Connection lost — reconnecting…') + held;
  $('retry-now').hidden = !S.retryTimer;
}
$('retry-now').addEventListener('click', retryNow);

function tlsText() {
  if (!wsSecure()) return wsLocal() ? 'not encrypted (this machine only)' : 'not encrypted';
  return S.info.selfSigned ? 'TLS, self-signed' : 'TLS';
}
function renderStatus() {
  const c = cur(), conv = c && c.kind !== 'server';
  $('status-nick').textContent = S.nick || S.wantNick;
  const conn = $('status-conn');
  conn.className = 'st-' + S.conn;
  conn.textContent = S.conn === 'connected' ? (S.away ? 'connected, away' : 'connected')
    : S.conn === 'reconnecting' ? (S.retryTimer ? 'reconnecting in ' + retryIn() + ' s…' : 'reconnecting…')
      : S.conn === 'connecting' ? 'connecting…' : 'offline';
  const tls = $('status-tls');
  tls.textContent = tlsText();
  tls.className = wsSecure() ? 'secure' : 'insecure';
  tls.title = wsSecure() && S.info.fingerprint ? 'Certificate SHA-256: ' + S.info.fingerprint : '';
  $('status-target').textContent = conv ? 'Enter sends to ' + c.name : 'pick a conversation';
  const ty = c && prefs.typing ? [...c.typing.values()].filter((t) => t.state === 'active').map((t) => t.nick) : [];
  $('typing').textContent = !ty.length ? '' : ty.length === 1 ? ty[0] + ' is typing…'
    : ty.length === 2 ? ty[0] + ' and ' + ty[1] + ' are typing…' : 'several people are typing…';
  $('file-button').hidden = !S.filehost;
  $('search-button').hidden = !S.caps.has('soju.im/search');
  renderBanner();
  $('input-label').textContent = conv ? 'Message to ' + c.name : 'Message';
  input.placeholder = conv ? 'Message ' + c.name : 'Type /join #room or /help';
}

// ---------- sidebar keys and clicks ----------
const convList = $('conversations'), memList = $('members');
const isNarrow = () => window.matchMedia('(max-width: 48rem)').matches;
convList.addEventListener('click', (e) => {
  const c = convOf.get(e.target.closest('li'));
  if (!c) return;
  select(c);
  if (isNarrow()) closeDrawer(); else input.focus();
});
convList.addEventListener('keydown', (e) => {
  const all = convOrder();
  if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); closeDrawer(); input.focus(); return; }
  const next = { ArrowDown: nextConv(cur(), 1), ArrowUp: nextConv(cur(), -1), Home: all[0], End: all[all.length - 1] }[e.key];
  if (!next) return;
  e.preventDefault();
  select(next);
  if (next.li) next.li.focus();
});
memList.addEventListener('click', (e) => {
  const li = e.target.closest('li');
  if (li && !isMe(li.dataset.nick)) openDM(li.dataset.nick);
});
memList.addEventListener('keydown', (e) => {
  const items = [...memList.children], i = items.indexOf(document.activeElement);
  if ((e.key === 'Enter' || e.key === ' ') && i >= 0) {
    e.preventDefault();
    if (!isMe(items[i].dataset.nick)) openDM(items[i].dataset.nick);
    return;
  }
  const n = { ArrowDown: Math.min(items.length - 1, i + 1), ArrowUp: Math.max(0, i - 1), Home: 0, End: items.length - 1 }[e.key];
  if (n == null || !items[n]) return;
  e.preventDefault();
  for (const li of items) li.tabIndex = -1;
  items[n].tabIndex = 0;
  items[n].focus();
  S.memberFocus = fold(items[n].dataset.nick);
});

// ---------- the drawer (narrow screens) ----------
function openDrawer() {
  document.body.classList.add('drawer-open');
  $('menu-button').setAttribute('aria-expanded', 'true');
  $('backdrop').hidden = false;
  setTimeout(() => ((cur() && cur().li) || convList.firstChild || $('menu-button')).focus(), 50);
}
function closeDrawer() {
  if (!document.body.classList.contains('drawer-open')) return;
  document.body.classList.remove('drawer-open');
  $('menu-button').setAttribute('aria-expanded', 'false');
  $('backdrop').hidden = true;
}
$('menu-button').addEventListener('click', () => (document.body.classList.contains('drawer-open') ? closeDrawer() : openDrawer()));
$('backdrop').addEventListener('click', closeDrawer);
$('sidebar').addEventListener('keydown', (e) => { if (e.key === 'Escape' && isNarrow()) { closeDrawer(); $('menu-button').focus(); } });

// ---------- the input line ----------
const input = $('input');
function autosize() {
  input.style.height = 'auto';
  input.style.height = Math.min(input.scrollHeight + 2, window.innerHeight / 3) + 'px';
}
input.addEventListener('input', () => { autosize(); typingInput(); S.complete = null; });
// Tab: a nickname (with ": " at the start of the line) or a /command; Tab again for the next match.
function complete(backwards) {
  const c = cur(), v = input.value, caret = input.selectionStart;
  let st = S.complete;
  if (!st || st.value !== v || st.caret !== caret) {
    const word = /(\S*)$/.exec(v.slice(0, caret))[1], start = caret - word.length;
    if (!word) return false;
    let cands;
    if (start === 0 && word[0] === '/') cands = Object.keys(COMMANDS).filter((k) => ('/' + k).startsWith(word.toLowerCase())).map((k) => '/' + k + ' ');
    else {
      const pool = new Map(), w = fold(word.replace(/^@/, ''));
      if (c) {
        for (let i = c.msgs.length - 1; i >= 0 && pool.size < 200; i--) if (c.msgs[i].nick) pool.set(fold(c.msgs[i].nick), c.msgs[i].nick);
        for (const mem of c.members.values()) pool.set(fold(mem.nick), mem.nick);
        if (c.kind === 'dm') pool.set(c.key, c.name);
      }
      cands = [...pool.values()].filter((n) => fold(n).startsWith(w) && !isMe(n)).map((n) => n + (start === 0 ? ': ' : ' '));
    }
    if (!cands.length) return false;
    st = S.complete = { start, cands, i: backwards ? cands.length - 1 : 0, tail: v.slice(caret) };
  } else st.i = (st.i + (backwards ? -1 : 1) + st.cands.length) % st.cands.length;
  const word = st.cands[st.i];
  input.value = st.value = v.slice(0, st.start) + word + st.tail;
  st.caret = st.start + word.length;
  input.setSelectionRange(st.caret, st.caret);
  return true;
}
input.addEventListener('keydown', (e) => {
  if (e.isComposing) return;
  if (e.key !== 'Tab') S.complete = null;
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    // Taken out of the input first: a command that opens another conversation (/msg, /query)
    // must not leave itself behind as this one's draft.
    const text = input.value, here = S.current;
    input.value = '';
    if (!submit(text)) {
      if (S.current === here) input.value = text;
      autosize();
      return;
    }
    S.sent.push(text);
    if (S.sent.length > 100) S.sent.shift();
    S.sentIdx = -1;
    input.value = '';
    autosize();
    sendTyping('done');
  } else if (e.key === 'Tab' && !e.ctrlKey && !e.altKey) {
    if (complete(e.shiftKey)) e.preventDefault();
  } else if (e.key === 'Escape') {
    if (S.reply) { e.preventDefault(); cancelReply(); } else closeDrawer();
  } else if (e.altKey && (e.key === 'ArrowUp' || e.key === 'ArrowDown')) {
    e.preventDefault();
    const n = nextConv(cur(), e.key === 'ArrowUp' ? -1 : 1, true);
    if (n) select(n);
  } else if ((e.key === 'ArrowUp' || e.key === 'ArrowDown') && !e.shiftKey && S.sent.length && !input.value.includes('\n') && (!input.value || S.sentIdx >= 0)) {
    // earlier lines you typed, as in irssi and WeeChat
    e.preventDefault();
    if (e.key === 'ArrowUp') S.sentIdx = S.sentIdx < 0 ? S.sent.length - 1 : Math.max(0, S.sentIdx - 1);
    else if (S.sentIdx >= 0 && ++S.sentIdx >= S.sent.length) S.sentIdx = -1;
    input.value = S.sentIdx < 0 ? '' : S.sent[S.sentIdx];
    autosize();
  } else if (e.key === 'PageUp' || e.key === 'PageDown') {
    e.preventDefault();
    box.scrollBy({ top: (e.key === 'PageUp' ? -0.9 : 0.9) * box.clientHeight });
  }
});
$('compose').addEventListener('submit', (e) => {
  e.preventDefault();
  input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
  input.focus();
});
$('reply-cancel').addEventListener('click', () => { cancelReply(); input.focus(); });
$('confirm-yes').addEventListener('click', () => answerDelete(true));
$('confirm-no').addEventListener('click', () => answerDelete(false));
$('confirm-bar').addEventListener('keydown', (e) => {
  const k = e.key.toLowerCase();
  if (k === 'y') { e.preventDefault(); answerDelete(true); } else if (k === 'n' || k === 'escape') { e.preventDefault(); answerDelete(false); }
});

// ---------- files (soju.im/FILEHOST) ----------
function upload(file) {
  const c = sendable();
  if (!c || !S.filehost) return;
  const item = h('li', 'upload'), prog = h('progress'), cancel = button('up-cancel', '✕', 'Cancel the upload of ' + file.name);
  prog.max = 1;
  prog.value = 0;
  prog.setAttribute('aria-label', 'Uploading ' + file.name);
  item.append(h('span', 'up-name', file.name + ' (' + humanSize(file.size) + ')'), prog, cancel);
  $('uploads').append(item);
  const xhr = new XMLHttpRequest(), fail = (why) => { item.remove(); localLine('Upload of ' + file.name + ' failed: ' + why, 'error', c); };
  xhr.open('POST', S.filehost);
  xhr.setRequestHeader('Content-Type', file.type || 'application/octet-stream');
  xhr.setRequestHeader('Content-Disposition', "attachment; filename*=UTF-8''" + encodeURIComponent(file.name).replace(/['()*]/g, (ch) => '%' + ch.charCodeAt(0).toString(16).toUpperCase()));
  // The connection's own upload URL needs no password; only an account's /upload would.
  if (S.creds && S.creds.password && S.loggedIn && /^https:/i.test(S.filehost) && /\/upload$/.test(new URL(S.filehost).pathname)) xhr.setRequestHeader('Authorization', 'Basic ' + b64(S.creds.account + ':' + S.creds.password));
  xhr.upload.onprogress = (e) => { if (e.lengthComputable) prog.value = e.loaded / e.total; };
  cancel.addEventListener('click', () => { xhr.abort(); item.remove(); });
  xhr.onload = () => {
    if (xhr.status !== 201) {
      const body = (xhr.responseText || '').replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 200);
      const why = { 413: 'the file is too large', 507: 'no room left for it (quota)', 401: 'uploads need an account login', 403: 'you may not upload here' }[xhr.status];
      return fail((why || 'the server answered ' + xhr.status) + (body ? ' — ' + body : ''));
    }
    item.remove();
    const loc = xhr.getResponseHeader('Location');
    if (!loc) return fail('the server gave no address back');
    // The name the host stored it under (made safe there), as the link says it.
    let stored = file.name;
    try { stored = JSON.parse(xhr.responseText).name || stored; } catch (e) { /* not chat-tui's answer */ }
    const url = new URL(loc, S.filehost).href, line = stored.replace(/[\x00-\x1f\x7f]/g, ' ') + ' (' + humanSize(file.size) + ') ' + url;
    if (S.registered) privmsg(c.name, line); else localLine('Uploaded, but not connected to send it: ' + url, 'error', c);
  };
  xhr.onerror = () => fail('could not reach ' + S.filehost);
  xhr.send(file);
}
$('file-button').addEventListener('click', () => $('file-input').click());
$('file-input').addEventListener('change', (e) => { [...e.target.files].forEach(upload); e.target.value = ''; input.focus(); });
const main = $('main');
let dragDepth = 0;
const dropping = (on) => { $('drop-hint').hidden = !on; main.classList.toggle('dropping', on); if (!on) dragDepth = 0; };
const hasFiles = (e) => !!S.filehost && !!e.dataTransfer && [...e.dataTransfer.types].includes('Files');
main.addEventListener('dragenter', (e) => { if (hasFiles(e)) { e.preventDefault(); dragDepth++; dropping(true); } });
main.addEventListener('dragover', (e) => { if (hasFiles(e)) { e.preventDefault(); e.dataTransfer.dropEffect = 'copy'; } });
main.addEventListener('dragleave', () => { if (--dragDepth <= 0) dropping(false); });
main.addEventListener('drop', (e) => { if (hasFiles(e)) { e.preventDefault(); dropping(false); [...e.dataTransfer.files].forEach(upload); } });

// ---------- search (soju.im/search) ----------
// The server searches what you may read (your rooms, your account's direct conversations); a
// result opens its conversation at that message.
const searchBox = $('search');
function openSearch(words) {
  if (!S.caps.has('soju.im/search')) return localLine('This server does not search its history; /help lists what it does.', 'error');
  $('search-input').value = words || $('search-input').value;
  if (!searchBox.open) searchBox.showModal();
  if (words) runSearch(); else $('search-input').focus();
}
function runSearch() {
  const words = $('search-input').value.trim(), c = cur();
  if (!words) return;
  const esc = (v) => v.replace(/\\/g, '\\\\').replace(/;/g, '\\:').replace(/ /g, '\\s');
  const here = $('search-here').checked && c && c.kind !== 'server' ? ';in=' + esc(c.name) : '';
  $('search-status').textContent = 'Searching…';
  $('search-results').replaceChildren();
  send('SEARCH', ['text=' + esc(words) + here + ';limit=50']);
}
function searchResults(items) {
  const list = items.filter((x) => x.command === 'PRIVMSG' || x.command === 'NOTICE').reverse(); // newest first
  $('search-status').textContent = list.length ? list.length + (list.length === 1 ? ' message' : ' messages') + ', newest first' : 'Nothing found';
  $('search-results').replaceChildren(...list.map((x) => {
    const target = x.params[0] || '', where = isChannel(target) ? target : isMe(x.nick) ? target : x.nick;
    const t = Date.parse(x.tags.time || ''), li = h('li');
    li.tabIndex = 0;
    li.append(h('span', 'where', (isNaN(t) ? '' : new Date(t).toLocaleDateString(undefined, { day: 'numeric', month: 'short', year: 'numeric' }) + ' ' + hhmm(t) + ' · ') + where + ' · '), h('strong', null, x.nick + ': '));
    renderText(li, x.params[1] || '');
    const open = () => {
      searchBox.close();
      const conv = isChannel(where) ? findConv(where) : getConv(where, 'dm');
      if (!conv) return;
      select(conv);
      if (x.tags.msgid) jump(x.tags.msgid);
    };
    li.addEventListener('click', open);
    li.addEventListener('keydown', (e) => { if (e.key === 'Enter') open(); });
    return li;
  }));
}
$('search-button').addEventListener('click', () => openSearch(''));
$('search-form').addEventListener('submit', (e) => { e.preventDefault(); runSearch(); });
$('search-close').addEventListener('click', () => searchBox.close());
searchBox.addEventListener('close', () => input.focus());

// ---------- settings ----------
const settingsBox = $('settings');
function renderNotifyState() {
  $('notify-state').textContent = !notifiable() ? 'This browser has no notifications.'
    : Notification.permission === 'denied' ? 'The browser blocks notifications for this page: allow them in its site settings.'
      : Notification.permission === 'granted' ? 'The browser allows them.' : 'The browser will ask the first time one would show.';
}
$('settings-button').addEventListener('click', () => {
  $('set-theme').value = prefs.theme;
  $('set-notify').checked = !!prefs.notify;
  $('set-typing').checked = !!prefs.typing;
  $('set-compact').checked = !!prefs.compact;
  $('set-colors').checked = !!prefs.colors;
  $('set-clock').value = prefs.clock;
  renderNotifyState();
  settingsBox.showModal();
});
$('settings-form').addEventListener('change', () => {
  Object.assign(prefs, { theme: $('set-theme').value, notify: $('set-notify').checked, typing: $('set-typing').checked,
    compact: $('set-compact').checked, colors: $('set-colors').checked, clock: $('set-clock').value });
  try { localStorage.setItem('chat-tui.settings', JSON.stringify(prefs)); } catch (e) { /* storage off: for this page only */ }
  applyPrefs();
  if (prefs.notify && notifiable() && Notification.permission === 'default') Notification.requestPermission().then(() => { renderNotifyState(); subscribePush(); });
  if (!prefs.typing) sendTyping('done');
  for (const c of S.convs.values()) for (const m of c.msgs) m.el = null; // times and colours drawn again
  renderMessages('keep');
  renderAll();
});
settingsBox.addEventListener('close', () => input.focus());
// Whoever used the tab before leaves nothing behind for the next person: conversations, lines
// typed (held or sent), the view, the reply (sign out, and any new login after leaving).
function resetSession() {
  S.convs.clear();
  S.users.clear();
  Object.assign(S, { current: null, pendingSelect: null, held: [], reply: null, sent: [], sentIdx: -1, below: 0, jumpTo: null,
    everRegistered: false, away: false, awayText: '' });
  S.openGroups.clear();
  try { sessionStorage.removeItem('chat-tui.current'); sessionStorage.removeItem('chat-tui.guest-dms'); } catch (e) { /* storage off */ }
  input.value = '';
  renderMessages('bottom');
  renderAll();
}
// Sign out: this tab forgets the login (and a guest's way back), leaves, and shows the form.
$('sign-out').addEventListener('click', () => {
  settingsBox.close();
  keepLogin(null);
  setResumeToken('');
  S.userQuit = true;
  if (S.creds) send('RESUME', ['FORGET']); // the server forgets this tab's login token too
  S.creds = null;
  S.accountToken = '';
  send('QUIT', ['signed out']);
  setTimeout(() => { closeSocket(); setConn('offline'); resetSession(); showLogin('You signed out.'); }, 300);
});

// ---------- login ----------
function showLogin(error) {
  $('login-view').hidden = false;
  $('chat-view').hidden = true;
  $('login-error').textContent = error || '';
  $('login-button').disabled = $('guest').disabled = false;
  renderTLS();
}
function showChat() {
  if (!$('chat-view').hidden) return;
  $('login-view').hidden = true;
  $('chat-view').hidden = false;
  renderAll();
  renderMessages('bottom');
  input.focus();
}
function renderTLS() {
  const note = $('tls-notice'), allowed = accountsAllowed(), i = S.info;
  note.replaceChildren();
  note.className = !wsSecure() ? 'insecure' : i.selfSigned ? 'self-signed' : 'secure';
  if (!wsSecure()) {
    note.append(h('strong', null, 'This connection is not encrypted. '), allowed
      ? 'The page and the server are both on this machine, so nothing crosses a network; from elsewhere, use the https address.'
      : 'Anyone on the network can read what you send, so account login is off here; joining as a guest works. For your account, open this page over https');
    // The same port speaks https when the host has a certificate (its fingerprint is in /info.json).
    if (!allowed && location.protocol === 'http:' && i.fingerprint) {
      const https = 'https://' + location.host + location.pathname;
      note.append(': ', linkEl(https, https));
    } else if (!allowed) note.append('.');
  } else if (i.selfSigned && i.fingerprint) {
    note.append(h('strong', null, 'Encrypted. '), 'The host made this certificate themselves. Compare its fingerprint with the one on the host\'s screen: ');
    const fp = h('code', 'fingerprint'); // wraps only after a colon
    i.fingerprint.split(':').forEach((x, k) => fp.append(...(k ? [':', h('wbr')] : []), x));
    note.append(fp);
  } else note.append(h('strong', null, 'Encrypted'), ' (TLS).');
  $('account').disabled = $('password').disabled = !allowed;
  $('create-line').hidden = !allowed || S.info.registration === false;
  $('account-note').textContent = allowed ? 'With an account, your history, direct messages and read positions follow you to every window.'
    : 'Account login needs an encrypted (https) connection.';
  $('server-line').textContent = 'Join ' + (i.room || 'the chat') + ' on ' + (i.network || i.name);
}
$('login').addEventListener('submit', (e) => {
  e.preventDefault();
  const guest = e.submitter && e.submitter.id === 'guest', err = $('login-error');
  const creating = e.submitter && e.submitter.id === 'create-account';
  const account = guest || creating ? '' : $('account').value.trim(), password = $('password').value;
  // Logging in to an account on a new device: its name is the nickname unless one is typed.
  const nick = $('nick').value.trim() || account;
  const problem = !nick ? ['Type a nickname first.', 'nick']
    : creating && !accountsAllowed() ? ['Making an account needs an encrypted (https) connection.', 'guest']
    : creating && $('account').value.trim() && $('account').value.trim().toLowerCase() !== nick.toLowerCase()
      ? ['A new account takes your nickname as its name: make the nickname ' + $('account').value.trim() + ', or clear the account name.', 'nick']
    : creating && password.length < 8 ? ['Choose a password of at least 8 characters for the new account (its name is your nickname).', 'password']
    : /[\s,*?!@:]/.test(nick) || /^[0-9#&-]/.test(nick) ? ['A nickname has no spaces, none of , * ? ! @ : and does not start with a digit, - or #.', 'nick']
      : account && !accountsAllowed() ? ['Account login needs an encrypted (https) connection; join as a guest here.', 'guest']
        : account && !password ? ['Type the password for ' + account + ', or join as a guest.', 'password']
          : !account && password && !guest && !creating ? ['Type the account name too, or join as a guest.', 'account'] : null;
  if (problem) { err.textContent = problem[0]; $(problem[1]).focus(); return; }
  S.creds = account ? { account, password } : null;
  S.accountToken = '';
  S.creating = creating ? { account: nick, password } : null;
  try { localStorage.setItem('chat-tui.nick', nick); if (account) localStorage.setItem('chat-tui.account', account); } catch (x) { /* storage off */ }
  // A new login in this tab (after /quit or signing out): nothing of the last one is kept.
  if (S.everRegistered || S.convs.size) resetSession();
  Object.assign(S, { wantNick: nick, userQuit: false, attempt: 0 });
  err.textContent = 'Connecting…';
  $('login-button').disabled = $('guest').disabled = true;
  closeSocket();
  connect();
});

// ---------- start ----------
try {
  $('nick').value = localStorage.getItem('chat-tui.nick') || '';
  $('account').value = localStorage.getItem('chat-tui.account') || '';
} catch (e) { /* storage off */ }
renderTLS();
$('nick').focus();
// An account's tab reloaded: logged in again, straight back to its rooms and conversations.
// A reload goes back to the conversation that was in view.
try { S.pendingSelect = sessionStorage.getItem('chat-tui.current') || null; } catch (e) { /* storage off */ }
const kept = keptLogin();
if (kept && $('nick').value) {
  Object.assign(S, { creds: kept, wantNick: $('nick').value, userQuit: false, attempt: 0 });
  $('account').value = kept.account;
  $('login-error').textContent = 'Logging in again as ' + kept.account + '…';
  connect();
} else if (resumeToken() && $('nick').value) {
  // A guest's tab reloaded: straight back in as itself (the server keeps it a minute for the token),
  // with its direct conversations as this tab kept them.
  Object.assign(S, { creds: null, wantNick: $('nick').value, userQuit: false, attempt: 0 });
  restoreGuestDMs();
  $('login-error').textContent = 'Coming back as ' + $('nick').value + '…';
  connect();
}
// A notification clicked (the service worker's, or a window already open): its conversation;
// a room not joined yet is taken when the join comes.
function openNamed(name) {
  if (!name) return;
  if (!isChannel(name)) return openDM(name);
  const c = findConv(name);
  if (c && c.joined) select(c); else S.pendingSelect = fold(name);
}
if ('serviceWorker' in navigator) {
  navigator.serviceWorker.addEventListener('message', (e) => { if (e.data && typeof e.data.open === 'string') openNamed(e.data.open); });
}
// The installable app: its service worker keeps the page for offline starts (and shows pushes).
if ('serviceWorker' in navigator && window.isSecureContext) {
  navigator.serviceWorker.register('/sw.js').catch((e) => console.warn('chat-tui: no service worker', e));
}
// /info.json: the server's name, room and certificate; a server without it gets the defaults.
fetch('/info.json', { cache: 'no-store' }).then((r) => (r.ok ? r.json() : null)).catch(() => {
  // Not even an answer: the page came from this browser's copy (the service worker).
  $('login-error').textContent = navigator.onLine ? 'The chat server cannot be reached now: this is the page as this browser kept it.'
    : 'You are offline: this is the page as this browser kept it.';
  return null;
}).then((info) => {
  if (!info || typeof info !== 'object') return;
  let same = false;
  try { same = new URL(wsURL()).host === location.host; } catch (e) { same = false; }
  const str = (v) => (typeof v === 'string' ? v : null);
  S.info = { name: str(info.name) || location.hostname, network: str(info.network) || '', room: str(info.room),
    registration: typeof info.registration === 'boolean' ? info.registration : null,
    fingerprint: same ? str(info.fingerprint) : null, selfSigned: same && !!info.selfSigned };
  renderTLS();
});
})();
