// Trivial service worker for oopif-basic.html (a second auto-attached target type).
self.addEventListener('install', function () { self.skipWaiting(); });
self.addEventListener('activate', function (e) { e.waitUntil(self.clients.claim()); });
