// nsys-lens service worker: cache-first for the site's own assets so the hosted page works offline
// after the first visit. It never caches or answers anything else (and the page sends nothing
// else: the trace is read from the local File, never fetched).
//
// It serves those assets cross-origin isolated (COOP same-origin, COEP require-corp), which
// GitHub Pages cannot send: a page loaded through it may share memory between its workers
// (`SharedArrayBuffer`, `Atomics.wait`). The first visit reloads itself once this worker is
// active (app.js, `registerServiceWorker`); a browser that refuses it and the offline single
// file run without.

const CACHE = 'nsys-lens-v1';
const ASSETS = [
  './',
  './index.html',
  './app.js',
  './worker.js',
  './styles.css',
  './ui/format.js',
  './ui/engine.js',
  './ui/cards.js',
  './ui/phases.js',
  './ui/facts.js',
  './ui/gaps.js',
  './ui/timeline.js',
  './ui/rootcause.js',
  './ui/drill.js',
  './ui/compare.js',
  './ui/hostside.js',
  './ui/lprof.js',
  './ui/capture.js',
  './ui/whatif.js',
  './ui/ranks.js',
  './ui/progress.js',
  './ui/exports.js',
  './ui/offline.js',
  './pkg/nsys_lens.js',
  './pkg/nsys_lens_bg.wasm',
  './favicon.svg',
  './logo.svg',
];
const SCOPE = new URL('./', self.location).href;
const OWN = new Set(ASSETS.map((a) => new URL(a, self.location).href));

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(ASSETS.map((a) => new Request(a, { cache: 'reload' }))))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith('nsys-lens-') && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  url.hash = '';
  url.search = '';
  const key = url.href === SCOPE ? new URL('./index.html', SCOPE).href : url.href;
  if (!OWN.has(key) && url.href !== SCOPE) return; // not ours: let the browser handle it
  event.respondWith(
    caches.open(CACHE).then(async (cache) => {
      const hit = (await cache.match(key)) || (await cache.match(url.href));
      if (hit) return isolated(hit);
      const res = await fetch(req);
      if (res.ok && res.type === 'basic') cache.put(key, res.clone());
      return isolated(res);
    }),
  );
});

// `res` with the headers that make a document (and the workers it starts) cross-origin isolated.
function isolated(res) {
  if (res.type !== 'basic' && res.type !== 'default') return res;
  const headers = new Headers(res.headers);
  headers.set('Cross-Origin-Opener-Policy', 'same-origin');
  headers.set('Cross-Origin-Embedder-Policy', 'require-corp');
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}
