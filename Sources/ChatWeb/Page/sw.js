// chat-tui's service worker: the page's shell kept for offline starts (network first, so a new
// binary's page is used at once; this browser's copy only when the server cannot be reached),
// and Web Push: a notification for a direct message, a mention or an invitation while no
// window of the page is in view, opening its conversation on a click.
'use strict';
const SHELL = 'chat-tui-shell';
const FILES = ['/', '/app.js', '/style.css', '/manifest.webmanifest', '/icon-192.png', '/icon-512.png'];

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(SHELL).then((cache) => cache.addAll(FILES)).then(() => self.skipWaiting()));
});
self.addEventListener('activate', (event) => { event.waitUntil(self.clients.claim()); });

self.addEventListener('fetch', (event) => {
  const request = event.request, url = new URL(request.url);
  // Only the shell: /irc, /info.json and files always go to the server.
  if (request.method !== 'GET' || url.origin !== self.location.origin || !FILES.includes(url.pathname)) return;
  event.respondWith(fetch(request).then((response) => {
    if (response.ok) {
      const copy = response.clone();
      caches.open(SHELL).then((cache) => cache.put(url.pathname, copy));
    }
    return response;
  }).catch(() => caches.match(url.pathname).then((kept) => kept || Response.error())));
});

// Web Push: each push is one IRC line (draft/webpush). A direct message, a mention or an
// invitation shows a notification (one per conversation: a newer one replaces it); a MARKREAD
// from another device closes that conversation's. A click opens the page on the conversation.
function ircLine(text) {
  let rest = text, tags = {}, source = '';
  if (rest[0] === '@') {
    const sp = rest.indexOf(' ');
    for (const t of rest.slice(1, sp).split(';')) { const eq = t.indexOf('='); tags[eq < 0 ? t : t.slice(0, eq)] = eq < 0 ? '' : t.slice(eq + 1); }
    rest = rest.slice(sp + 1);
  }
  if (rest[0] === ':') { const sp = rest.indexOf(' '); source = rest.slice(1, sp); rest = rest.slice(sp + 1); }
  const colon = rest.indexOf(' :');
  const params = (colon < 0 ? rest : rest.slice(0, colon)).split(' ').filter(Boolean);
  if (colon >= 0) params.push(rest.slice(colon + 2));
  return { tags, nick: source.split('!')[0], command: (params.shift() || '').toUpperCase(), params };
}
self.addEventListener('push', (event) => {
  const m = ircLine(event.data ? event.data.text() : '');
  if (m.command === 'MARKREAD') {
    const tag = 'chat-tui:' + (m.params[0] || '').toLowerCase();
    event.waitUntil(self.registration.getNotifications({ tag }).then((list) => list.forEach((n) => n.close())));
    return;
  }
  const target = m.params[0] || '', room = /^[#&]/.test(target);
  let text = m.params[1] || '';
  if (text.startsWith('\x01ACTION ')) text = '* ' + m.nick + ' ' + text.slice(8).replace(/\x01$/, '');
  const where = m.command === 'INVITE' ? (m.params[1] || '') : room ? target : m.nick;
  const title = m.command === 'INVITE' ? m.nick + ' invites you to ' + where : room ? m.nick + ' in ' + target : m.nick;
  event.waitUntil(self.clients.matchAll({ type: 'window' }).then((windows) => {
    // A window of the page in view tells you itself.
    if (windows.some((w) => w.visibilityState === 'visible')) return undefined;
    return self.registration.showNotification(title, {
      body: m.command === 'INVITE' ? 'Open to join' : text.slice(0, 200), tag: 'chat-tui:' + where.toLowerCase(),
      icon: '/icon-192.png', data: { where, msgid: m.tags.msgid || '' },
    });
  }));
});
self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = '/#' + encodeURIComponent(event.notification.data && event.notification.data.where || '');
  event.waitUntil(self.clients.matchAll({ type: 'window' }).then((windows) => {
    const open = windows.find((w) => new URL(w.url).origin === self.location.origin);
    if (open) { open.postMessage({ open: event.notification.data.where }); return open.focus(); }
    return self.clients.openWindow(url);
  }));
});
