import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { ServiceClient, SUBMIT_ATTEMPTS } from './client.js';

/** A service stand-in that drops the connection of the first `drops` submissions, then answers. */
function flakyService(drops: number): Promise<{ server: Server; url: string; seen: { key: string | undefined; body: string }[] }> {
  const seen: { key: string | undefined; body: string }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      seen.push({ key: req.headers['idempotency-key'] as string | undefined, body });
      if (seen.length <= drops) return void req.socket.destroy();
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: '7', spec: JSON.parse(body), state: 'queued' }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, seen })));
}

let open: Server | null = null;
afterEach(() => {
  open?.close();
  open = null;
});

describe('ServiceClient submissions with an idempotency key', () => {
  it('resends a submission that got no answer, under the same key, and returns the answer', async () => {
    const { server, url, seen } = await flakyService(1);
    open = server;
    const client = new ServiceClient(url, async () => 't');
    const job = await client.submit({ name: 'x', command: ['true'] }, { idempotencyKey: 'k-1' });
    expect(job.id).toBe('7');
    expect(seen).toHaveLength(2);
    expect(seen.map((s) => s.key)).toEqual(['k-1', 'k-1']);
    expect(seen[1]!.body).toBe(seen[0]!.body);
  }, 20_000);

  it('gives up after SUBMIT_ATTEMPTS sends with the one-line unreachable error, and never resends without a key', async () => {
    const { server, url, seen } = await flakyService(100);
    open = server;
    const client = new ServiceClient(url, async () => 't');
    const e = await client.submit({ name: 'x', command: ['true'] }, { idempotencyKey: 'k-2' }).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(MigpoolError);
    expect((e as MigpoolError).code).toBe('RUNTIME');
    expect((e as MigpoolError).message).toMatch(/^cannot reach the migpool service at http:\/\/127\.0\.0\.1:\d+: is `migpool serve` running\?/);
    expect(seen).toHaveLength(SUBMIT_ATTEMPTS);
    seen.length = 0;
    await client.submit({ name: 'x', command: ['true'] }).catch(() => undefined);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.key).toBeUndefined();
  }, 30_000);
});

describe('ServiceClient on a port fetch refuses', () => {
  it('says that the port is refused by fetch, not that the service is down', async () => {
    const e = await new ServiceClient('http://127.0.0.1:6000', async () => 't').submit({ name: 'x', command: ['true'] }).catch((err: unknown) => err);
    expect((e as MigpoolError).code).toBe('BAD_INPUT');
    expect((e as MigpoolError).message).toMatch(/fetch refuses that port .* run `migpool serve --listen HOST:PORT` on another port/);
  });
});
