import { readServerInfo, readToken } from '../server/files.js';

/**
 * How long `migpool users list` waits for the service's /metrics before listing without what each
 * user holds: a local service answers in milliseconds (the scrape reads memory), so 2 s only
 * guards against one that hangs.
 */
const SCRAPE_TIMEOUT_MS = 2000;

/** `migpool_user_allocated_gpus{user="bob"} 0.42` (user names are letters, digits, `_ . -`: no escapes). */
const SERIES = /^migpool_user_allocated_gpus\{user="([^"\\]*)"\} (\S+)$/gm;

/**
 * GPUs' worth each user's jobs hold now, as the service running on `dataDir` publishes it
 * (`migpool_user_allocated_gpus` on /metrics, read with the data dir's admin token); null when no
 * service answers there (none started, stopped, or no token file), so that callers list without it.
 */
export async function heldGpusNow(dataDir: string): Promise<Map<string, number> | null> {
  try {
    const [info, token] = await Promise.all([readServerInfo(dataDir), readToken(dataDir)]);
    const res = await fetch(new URL('/metrics', info.url), { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS) });
    if (!res.ok) return null;
    const out = new Map<string, number>();
    for (const m of (await res.text()).matchAll(SERIES)) out.set(m[1]!, Number(m[2]));
    return out;
  } catch {
    // No service to ask: the list is the store's alone.
    return null;
  }
}
