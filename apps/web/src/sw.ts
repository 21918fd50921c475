/**
 * The service worker that makes the app work offline: on install it caches
 * every file of the build (the page, its scripts and styles, the sandbox
 * workers and the tools' .wasm), then answers those requests from the cache.
 *
 * The file list is not written here: the build (precache-plugin.ts) puts
 * it, with a version that changes whenever any file does, in place of the
 * placeholder below. A changed version makes the browser install this
 * worker again, fetch the new files, and drop the old cache.
 *
 * It has no imports, so it builds to one classic script.
 */
declare const self: ServiceWorkerGlobalScope;
export {};

interface Manifest {
  version: string;
  /** Paths relative to this script (the app's root), e.g. "index.html", "assets/index-3f2a.js". */
  files: string[];
}

const MANIFEST: Manifest = JSON.parse('__CORRAL_PRECACHE_MANIFEST__');
const PREFIX = 'corral-web-';
const CACHE = `${PREFIX}${MANIFEST.version}`;
const root = new URL('./', self.location.href);
const INDEX = new URL('index.html', root).href;
const PRECACHED = new Set(MANIFEST.files.map((f) => new URL(f, root).href));

self.addEventListener('install', (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      // 'no-cache' revalidates what the page just loaded (a 304, not a second
      // download) and never pins a stale copy for offline use.
      await cache.addAll([...PRECACHED].map((url) => new Request(url, { cache: 'no-cache' })));
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const key of await caches.keys()) if (key.startsWith(PREFIX) && key !== CACHE) await caches.delete(key);
      await self.clients.claim();
    })(),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  url.hash = '';
  if (request.mode === 'navigate' && url.href.startsWith(root.href)) {
    // The app is one page: every navigation inside it gets index.html.
    event.respondWith(fromCache(INDEX, request));
    return;
  }
  if (PRECACHED.has(url.href)) event.respondWith(fromCache(url.href, request));
  // Anything else (nothing the app itself asks for) goes to the network as usual.
});

/** The cached copy; the network only if the cache lost it (storage cleared under us). */
async function fromCache(key: string, request: Request): Promise<Response> {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(key);
  if (hit) return hit;
  const response = await fetch(request);
  if (response.ok && request.mode !== 'navigate') await cache.put(key, response.clone());
  return response;
}
