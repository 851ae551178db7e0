import type { ServerResponse } from 'node:http';
import type { EventRecord } from '../store/types.js';
import type { PoolService } from '../control/service-port.js';

/** Options of {@link streamEvents}. */
export interface EventStreamOptions {
  /** Replay the events after this seq before the live ones; null: live ones only. */
  readonly afterSeq: number | null;
  /** Milliseconds between heartbeat comments. */
  readonly heartbeatMs: number;
  /** Events asked of `service.events` per page while replaying. */
  readonly pageSize?: number;
  /** A client this far behind (bytes buffered) is dropped; it reconnects with Last-Event-ID. */
  readonly maxBufferedBytes?: number;
  /** Which events this client may see (e.g. a user's own jobs'), and as what (null: not at all); absent: all, as they are. Order is kept. */
  readonly filter?: (event: EventRecord) => Promise<EventRecord | null>;
  /**
   * Whether the client may still listen (its token is still its user's, with the same rights),
   * asked before each event and at each heartbeat; false ends the stream. One question at a time:
   * events that arrive while one is asked share its answer. Absent: always.
   */
  readonly authorized?: () => Promise<boolean>;
}

/** One server-sent event: `id`, `event` (the type) and the record as JSON. */
export function formatEvent(event: EventRecord): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * Writes the service's events to `res` as text/event-stream until the client goes or `stop` is
 * called. The subscription starts before the replay so that nothing falls between the two; events
 * are sent once each, in seq order. Returns `stop`, which ends the response and unsubscribes (the
 * client's disconnect does the same, also one that came before this call: `res` already destroyed).
 */
export function streamEvents(service: PoolService, res: ServerResponse, options: EventStreamOptions): () => void {
  const pageSize = options.pageSize ?? 1000;
  const maxBuffered = options.maxBufferedBytes ?? 4 * 1024 * 1024;
  let lastSent = options.afterSeq ?? -1;
  let replaying = options.afterSeq !== null;
  const held: EventRecord[] = [];
  let closed = false;

  const write = (event: EventRecord): void => {
    if (closed) return;
    res.write(formatEvent(event));
    if (res.writableLength > maxBuffered) stop();
  };
  // With a filter, each event waits for the verdicts on those before it, so the order holds;
  // `lastSent` counts the events passed over too (it is the replay's cursor).
  const { filter, authorized } = options;
  let asking: Promise<boolean> | null = null;
  const stillAuthorized = (): Promise<boolean> =>
    (asking ??= authorized!()
      .catch(() => false)
      .finally(() => {
        asking = null;
      }));
  let verdicts: Promise<void> = Promise.resolve();
  // Live events wait for `authorized`; the replay, which follows the request's own check at once,
  // is checked once at its end instead (a replay of 100k events asks nothing per event).
  const send = (event: EventRecord, live: boolean): void => {
    if (closed || event.seq <= lastSent) return;
    lastSent = event.seq;
    const ask = live && authorized !== undefined;
    if (filter === undefined && !ask) return write(event);
    const allowed = ask ? stillAuthorized() : Promise.resolve(true);
    const verdict = filter === undefined ? Promise.resolve(event) : filter(event).catch(() => null);
    verdicts = verdicts.then(async () => {
      if (!(await allowed)) return stop();
      const shown = await verdict;
      if (shown !== null) write(shown);
    });
  };
  const unsubscribe = service.subscribe((event) => {
    if (replaying) held.push(event);
    else send(event, true);
  });
  const heartbeat = setInterval(() => {
    if (closed) return;
    if (authorized === undefined) return void res.write(`: heartbeat ${Date.now()}\n\n`);
    void stillAuthorized().then((ok) => (ok ? !closed && res.write(`: heartbeat ${Date.now()}\n\n`) : stop()));
  }, options.heartbeatMs);
  heartbeat.unref();

  function stop(): void {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    unsubscribe();
    res.end();
  }
  res.on('close', stop);
  // A client that went while its request was authorized (an async look-up of its token) left a
  // response already closed: its 'close' has been and gone, and nothing would ever unsubscribe it
  // nor clear its heartbeat (one subscriber and timer per such request, for the service's life).
  if (res.destroyed) {
    stop();
    return stop;
  }

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(`retry: 3000\n: migpool events${options.afterSeq !== null ? ` after ${options.afterSeq}` : ''}\n\n`);

  if (replaying) {
    void (async () => {
      try {
        for (;;) {
          const page = await service.events(lastSent, pageSize);
          for (const event of page) send(event, false);
          if (page.length < pageSize || closed) break;
        }
      } catch (e) {
        if (!closed) res.write(`: replay failed: ${(e instanceof Error ? e.message : String(e)).replace(/\n/g, ' ')}\n\n`);
      }
      // Events that came during the replay are held (and keep coming while this is asked).
      if (authorized !== undefined && held.length > 0 && !closed && !(await stillAuthorized())) return stop();
      replaying = false;
      held.sort((a, b) => a.seq - b.seq);
      for (const event of held.splice(0)) send(event, false);
    })();
  }
  return stop;
}
