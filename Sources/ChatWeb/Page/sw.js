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
