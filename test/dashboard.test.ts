import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../src/server/app.js';
import { FakePoolService } from './fake-pool-service.js';

/** Debian's chromium (apt-get install chromium); never a downloaded browser. */
const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'f'.repeat(64);
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`test/dashboard.test.ts skipped: ${CHROMIUM} is missing (apt-get install chromium)`);

describe.skipIf(!haveChromium)('dashboard in chromium', () => {
  let fake: FakePoolService;
  let app: FastifyInstance;
  let url: string;
  let browser: Browser;
  let context: BrowserContext;
  const cancelled: string[] = [];

  beforeAll(async () => {
    fake = new FakePoolService();
    fake.now = Date.now() - 120_000;
    fake.addGpu('NVIDIA A100-SXM4-40GB', 7, [
      ['3g.20gb', 4, 4],
      ['2g.10gb', 0, 2],
      ['1g.5gb', 2, 1],
    ]);
    fake.addGpu('NVIDIA A100-SXM4-40GB', 7, [], false);
    const submit = (name: string, resources: object, priority = 'foreground') => fake.submit({ name, command: ['python', 'train.py'], resources, priority });
    await fake.submit({ name: 'resnet50-imagenet', command: ['python', 'train.py'], resources: { profile: '3g.20gb' } }, { owner: 'alice' });
    await submit('bert-large', { gpus: 1 });
    await submit('cifar-small', { profile: '1g.5gb' });
    await submit('vit-tiny', { profile: '2g.10gb' }, 'background');
    await submit('gpt2-finetune', { memory: '16GiB' });
    fake.now = Date.now() - 60_000;
    fake.startJob('1', 0, 4);
    fake.startJob('2', 1, null);
    fake.appendLog('1', 'stdout', 'epoch 1/90 loss 6.91\nepoch 2/90 loss 5.12\n');
    fake.appendLog('1', 'stderr', 'warning: cudnn benchmark off\n');
    const realCancel = fake.cancel.bind(fake);
    fake.cancel = async (id) => {
      cancelled.push(id);
      return realCancel(id);
    };
    fake.now = Date.now();
    app = await buildServer({ service: fake, token: TOKEN, processMetrics: false });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
    // launch() runs chromium on a fresh temporary profile of its own (and removes it on close).
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    if (app) {
      app.server.closeAllConnections();
      await app.close();
    }
  });

  /** Every read needs the token: the dashboard is opened as /?token=... (kept in the tab, dropped from the address). */
  async function open(path = `/?token=${TOKEN}`): Promise<Page> {
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${url}${path}`);
    await page.waitForSelector('body[data-loaded]');
    expect(errors).toEqual([]);
    return page;
  }

  it('draws each GPU as its slices, with profiles and job names, idle ones idle', async () => {
    const page = await open();
    const gpu0 = page.locator('.gpu[data-gpu="0"] .slice');
    expect(await gpu0.evaluateAll((nodes) => nodes.map((n) => [n.className, n.querySelector('.profile')!.textContent, n.querySelector('.job')!.textContent]))).toEqual([
      ['slice idle', '2g.10gb', 'idle'],
      ['slice idle', '1g.5gb', 'idle'],
      ['slice free', '1 slice', 'free'],
      ['slice busy', '3g.20gb', 'resnet50-imagenet'],
    ]);
    // Widths follow the compute slices: 2 : 1 : 1 : 3 (7 on an A100).
    const widths = await gpu0.evaluateAll((nodes) => nodes.map((n) => n.getBoundingClientRect().width));
    expect(widths[0]! / widths[1]!).toBeCloseTo(2, 0);
    expect(widths[2]! / widths[1]!).toBeCloseTo(1, 1);
    expect(widths[3]! / widths[1]!).toBeCloseTo(3, 0);
    const whole = page.locator('.gpu[data-gpu="1"] .slice');
    expect(await whole.count()).toBe(1);
    expect(await whole.textContent()).toContain('bert-large');
    expect(await page.locator('.gpu[data-gpu="1"] .badge').first().textContent()).toBe('MIG off');
    await page.screenshot({ path: join(tmpdir(), 'migpool-dashboard.png'), fullPage: true });
    await page.close();
  });

  it("draws another user's jobs as busy slices without their names or ids", async () => {
    const BOB = 'b'.repeat(64);
    const bobs = await buildServer({ service: fake, callers: async (t) => (t === BOB ? { name: 'bob', admin: false } : null), processMetrics: false });
    const bobUrl = await bobs.listen({ host: '127.0.0.1', port: 0 });
    try {
      const page = await context.newPage();
      await page.goto(`${bobUrl}/?token=${BOB}`);
      await page.waitForSelector('body[data-loaded]');
      const slices = (gpu: number) =>
        page.locator(`.gpu[data-gpu="${gpu}"] .slice`).evaluateAll((nodes) => nodes.map((n) => [n.className, n.querySelector('.profile')!.textContent, n.querySelector('.job')!.textContent, n.getAttribute('data-job')]));
      expect(await slices(0)).toEqual([
        ['slice idle', '2g.10gb', 'idle', null],
        ['slice idle', '1g.5gb', 'idle', null],
        ['slice free', '1 slice', 'free', null],
        ['slice busy', '3g.20gb', "another user's job", null],
      ]);
      expect(await slices(1)).toEqual([['slice busy', 'whole GPU', "another user's job", null]]);
      expect(await page.content()).not.toMatch(/resnet50-imagenet|bert-large/);
      await page.close();
    } finally {
      bobs.server.closeAllConnections();
      await bobs.close();
    }
  });

  it('shows processes migpool did not start on their slice and GPU (pids to an admin, a count to others), and a queue longer than its page', async () => {
    const other = new FakePoolService();
    other.addGpu('NVIDIA A100-SXM4-40GB', 7, [
      ['3g.20gb', 4, 4],
      ['1g.5gb', 0, 1],
    ]);
    other.addGpu('NVIDIA A100-SXM4-40GB', 7, [], false);
    other.gpuList[0]!.instances[1]!.foreignPids = [4000];
    other.gpuList[1]!.foreignPids = [4001, 4002];
    await other.submitMany(Array.from({ length: 501 }, (_, i) => ({ name: `queued-${i}`, command: ['true'], resources: { profile: '1g.5gb' } })));
    const BOB = 'b'.repeat(64);
    const server = await buildServer({ service: other, callers: async (t) => (t === TOKEN ? { name: 'admin', admin: true } : t === BOB ? { name: 'bob', admin: false } : null), processMetrics: false });
    const otherUrl = await server.listen({ host: '127.0.0.1', port: 0 });
    try {
      const slices = async (token: string) => {
        const page = await context.newPage();
        await page.goto(`${otherUrl}/?token=${token}`);
        await page.waitForSelector('body[data-loaded]');
        const seen = await page.locator('.gpu .slice').evaluateAll((nodes) => nodes.map((n) => [n.className, n.querySelector('.profile')!.textContent, n.querySelector('.job')!.textContent]));
        return { page, seen };
      };
      const admin = await slices(TOKEN);
      expect(admin.seen).toEqual([
        ['slice foreign', '1g.5gb', 'process 4000 (not started by migpool)'],
        ['slice free', '3 slices', 'free'],
        ['slice idle', '3g.20gb', 'idle'],
        ['slice foreign', 'whole GPU', 'processes 4001, 4002 (not started by migpool)'],
      ]);
      expect(await admin.page.locator('.gpu[data-gpu="0"] .slice.foreign').getAttribute('title')).toContain('no job starts here until it ends');
      // The queue shows its first page (500) and says more wait.
      expect(await admin.page.locator('#queue-count').textContent()).toBe('500+');
      expect(await admin.page.locator('#queue li[data-job]').count()).toBe(500);
      expect(await admin.page.locator('#queue li.more').textContent()).toBe('more jobs wait after these 500: list them all with migpool jobs --state queued');
      await admin.page.screenshot({ path: join(tmpdir(), 'migpool-dashboard-foreign.png') });
      await admin.page.close();
      const bob = await slices(BOB);
      expect(bob.seen.filter((c) => c[0] === 'slice foreign').map((c) => c[2])).toEqual(['1 process (not started by migpool)', '2 processes (not started by migpool)']);
      expect(await bob.page.content()).not.toMatch(/400[0-2]/);
      await bob.page.close();
    } finally {
      server.server.closeAllConnections();
      await server.close();
    }
  });

  it('lists the queue and the jobs, and shows charts', async () => {
    const page = await open();
    expect(await page.locator('#queue li').evaluateAll((nodes) => nodes.map((n) => n.querySelector('.qname')!.textContent))).toEqual(['cifar-small', 'vit-tiny', 'gpt2-finetune']);
    expect(await page.locator('#queue-count').textContent()).toBe('3');
    expect(await page.locator('#jobs tbody tr').count()).toBe(5);
    expect(await page.locator('#jobs tbody tr[data-job="1"] .state').textContent()).toBe('running');
    expect(await page.locator('#jobs tbody tr[data-job="1"] td.owner').textContent()).toBe('alice');
    expect(await page.locator('#jobs thead th').nth(2).textContent()).toBe('User');
    expect(await page.locator('#chart-util canvas').count()).toBeGreaterThan(0);
    await page.close();
  });

  it("opens a job's details and its live log on click", async () => {
    const page = await open();
    await page.locator('.gpu[data-gpu="0"] .slice.busy').click();
    await page.waitForSelector('#details:not([hidden])');
    expect(await page.locator('#d-title').textContent()).toContain('resnet50-imagenet');
    expect(await page.locator('#d-facts').textContent()).toContain('useralice');
    await expect.poll(() => page.locator('#log').textContent()).toBe('epoch 1/90 loss 6.91\nepoch 2/90 loss 5.12\n');
    fake.appendLog('1', 'stdout', 'epoch 3/90 loss 4.40\n');
    await expect.poll(() => page.locator('#log').textContent()).toContain('epoch 3/90');
    await page.locator('#tab-stderr').click();
    await expect.poll(() => page.locator('#log').textContent()).toBe('warning: cudnn benchmark off\n');
    expect(await page.locator('#d-cancel').isDisabled()).toBe(false);
    await page.screenshot({ path: join(tmpdir(), 'migpool-dashboard-details.png') });
    await page.close();
  });

  it('updates from the event stream when a job starts', async () => {
    const page = await open();
    await page.waitForSelector('#live[data-state="live"]');
    fake.startJob('3', 0, 2);
    await page.waitForSelector('.gpu[data-gpu="0"] .slice.busy[data-job="3"]', { timeout: 5000 });
    expect(await page.locator('.gpu[data-gpu="0"] .slice[data-job="3"] .job').textContent()).toBe('cifar-small');
    expect(await page.locator('#queue li .qname').allTextContents()).toEqual(['vit-tiny', 'gpt2-finetune']);
    expect(await page.locator('#jobs tbody tr[data-job="3"] .state').textContent()).toBe('running');
    await page.close();
  });

  it('shows a GPU being reconfigured', async () => {
    const page = await open();
    fake.gpuList[0]!.reconfiguring = true;
    fake.emit('gpu-reconfiguring', null, { gpu: 0 });
    await page.waitForSelector('.gpu.reconfiguring[data-gpu="0"]');
    expect(await page.locator('.gpu[data-gpu="0"] .badge.reconf').textContent()).toBe('reconfiguring');
    await page.screenshot({ path: join(tmpdir(), 'migpool-dashboard-reconfiguring.png') });
    fake.gpuList[0]!.reconfiguring = false;
    fake.emit('gpu-reconfigured', null, { gpu: 0 });
    await page.waitForSelector('.gpu[data-gpu="0"]:not(.reconfiguring)');
    await page.close();
  });

  it('cancels a job when opened with ?token=, and drops the token from the address', async () => {
    const page = await open(`/?token=${TOKEN}`);
    expect(page.url()).toBe(`${url}/`);
    await page.locator('#queue li[data-job="5"]').click();
    await page.waitForSelector('#details:not([hidden])');
    await page.locator('#d-cancel').click();
    await expect.poll(() => page.locator('#jobs tbody tr[data-job="5"] .state').textContent()).toBe('cancelled');
    expect(cancelled).toEqual(['5']);
    await page.close();
  });

  it('without the token, shows no job, no env and no log, and says how to open it', async () => {
    const page = await context.newPage();
    const answers: number[] = [];
    page.on('response', (r) => {
      if (r.url().includes('/v1/')) answers.push(r.status());
    });
    await page.goto(`${url}/`);
    await page.waitForSelector('#need-token:not([hidden])');
    expect(await page.locator('#need-token').textContent()).toContain('?token=');
    expect(await page.locator('#jobs tbody tr').count()).toBe(0);
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.every((s) => s === 401)).toBe(true);
    await page.close();
  });

  it('says why a queued job waits and how a running job is doing', async () => {
    const queued = fake.jobs.get('4')!;
    const running = fake.jobs.get('1')!;
    fake.jobs.set('4', { ...queued, pending: 'waiting for a 2g.10gb slice (held by job 9)' });
    fake.jobs.set('1', { ...running, progress: { samples: 4500, total: 10_000, fraction: 0.45, samplesPerSecond: 1200, etaSeconds: 190, updatedAt: Date.now() } });
    const page = await open();
    expect(await page.locator('#queue li[data-job="4"] .why').textContent()).toBe('waiting for a 2g.10gb slice (held by job 9)');
    expect(await page.locator('#jobs tbody tr[data-job="1"] td.note').textContent()).toBe('45% · 1200 samples/s · eta 3m 10s');
    await page.locator('#jobs tbody tr[data-job="1"]').click();
    await page.waitForSelector('#details:not([hidden])');
    expect(await page.locator('#d-facts').textContent()).toContain('progress45% · 1200 samples/s · eta 3m 10s');
    await page.screenshot({ path: join(tmpdir(), 'migpool-dashboard-progress.png') });
    fake.jobs.set('4', queued);
    fake.jobs.set('1', running);
    await page.close();
  });

  it('shows a GPU whose re-partitions fail, with the error and the back-off', async () => {
    fake.repartitionFailure = { gpu: 1, failures: 3, error: 'In use by another client', retryAt: Date.now() + 20_000 };
    const page = await open();
    const text = await page.locator('.gpu[data-gpu="1"] .gpu-failure').textContent();
    expect(text).toMatch(/re-partition failed 3× in a row: In use by another client \(next try in (1\d|20)s\)/);
    fake.repartitionFailure = null;
    await page.close();
  });
});
