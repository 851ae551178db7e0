import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { chmod, link, mkdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { badInput, MigpoolError } from '../errors.js';

/**
 * The data directory of `migpool serve`, shared by the service and the CLI client:
 *
 * - `token`: the bearer token that mutating API calls need (mode 0600, created on first start);
 * - `server.json`: where the running service listens (`{"url", "pid"}`), so that client commands
 *   find it without flags.
 */

/** File name of the bearer token inside the data dir. */
export const TOKEN_FILE = 'token';
/** File name of the running service's address inside the data dir. */
export const SERVER_INFO_FILE = 'server.json';

/** `$MIGPOOL_DATA_DIR`, else `$XDG_DATA_HOME/migpool`, else `~/.local/share/migpool`. */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env['MIGPOOL_DATA_DIR'];
  if (explicit !== undefined && explicit.trim() !== '') return explicit;
  const xdg = env['XDG_DATA_HOME'];
  return join(xdg !== undefined && xdg.trim() !== '' ? xdg : join(homedir(), '.local', 'share'), 'migpool');
}

/** Path of the token file of a data dir. */
export function tokenPath(dataDir: string): string {
  return join(dataDir, TOKEN_FILE);
}

/** Options of {@link loadOrCreateToken}. */
export interface TokenOptions {
  /** Told when an existing token file was readable by group or others and was made 0600. */
  readonly onWarning?: (message: string) => void;
}

function errnoOf(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException).code;
}

/**
 * Refuses a directory the user named (`flag`, e.g. --data-dir) when a file stands where it or one
 * of its parents should be, before anything is created: mkdir would fail with a bare EEXIST or
 * ENOTDIR. BAD_INPUT: `--data-dir 'x' is a file, not a directory; give a directory`, and `hint`
 * after it when given. A path that exists as a directory, or does not exist yet, passes.
 */
export function checkDirectoryPath(dir: string, flag: string, hint?: string): void {
  const fix = `give a directory${hint ? ` (${hint})` : ''}`;
  for (let at = dir; ; ) {
    let isDirectory: boolean;
    try {
      isDirectory = statSync(at).isDirectory();
    } catch (e) {
      const code = errnoOf(e);
      // Not there yet (or under a file: ENOTDIR): look at the parent. Anything else is mkdir's to report.
      if (code !== 'ENOENT' && code !== 'ENOTDIR') return;
      const up = dirname(at);
      if (up === at) return;
      at = up;
      continue;
    }
    if (isDirectory) return;
    throw badInput(at === dir ? `${flag} '${dir}' is a file, not a directory; ${fix}` : `${flag} '${dir}': '${at}' is a file, not a directory; ${fix}`);
  }
}

function checkToken(text: string, path: string): string {
  const token = text.trim();
  if (token.length < 16 || /\s/.test(token)) {
    throw badInput(`the token file ${path} does not hold a token (16 or more characters, no spaces): delete it and restart \`migpool serve\` to create a new one`);
  }
  return token;
}

/**
 * The service's bearer token: read from `<dataDir>/token`, or, on first start, 32 random bytes as
 * hex written there with mode 0600 (the data dir is created with mode 0700 if missing). Creation is
 * atomic: the token is written to a private temporary file that is then hard-linked into place, so
 * two services starting at once agree on one token and nobody reads a half-written file.
 *
 * An existing token file that group or others may read is tightened to 0600 (and `onWarning` is
 * told) rather than refused: the file is the service's own, and refusing would only stop the
 * service without making the token any safer. A file that cannot be read or tightened is an error.
 */
/** A fresh token: 32 random bytes as 64 hex digits (the first-start token and every user's). */
export function newToken(): string {
  return randomBytes(32).toString('hex');
}

/**
 * Writes `token` to a new file of mode 0600 beside the data dir's token file and returns its path,
 * for the caller to link or rename into place (and to unlink when that fails).
 */
export async function writeTokenTemp(dataDir: string, token: string): Promise<string> {
  const temp = join(dataDir, `.token-${process.pid}-${randomBytes(6).toString('hex')}`);
  await writeFile(temp, `${token}\n`, { mode: 0o600, flag: 'wx' });
  return temp;
}

export async function loadOrCreateToken(dataDir: string, options: TokenOptions = {}): Promise<string> {
  const path = tokenPath(dataDir);
  checkDirectoryPath(dataDir, '--data-dir');
  try {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw new MigpoolError('RUNTIME', `cannot create the data dir ${dataDir}: ${errnoOf(e) ?? (e as Error).message}; pass --data-dir with a writable directory`);
  }
  const fresh = newToken();
  let temp: string | null = null;
  try {
    temp = await writeTokenTemp(dataDir, fresh);
    try {
      await link(temp, path);
      return fresh;
    } catch (e) {
      if (errnoOf(e) !== 'EEXIST') throw e;
    }
  } catch (e) {
    throw new MigpoolError('RUNTIME', `cannot write the token file ${path}: ${errnoOf(e) ?? (e as Error).message}; pass --data-dir with a writable directory`);
  } finally {
    if (temp !== null) await unlink(temp).catch(() => undefined);
  }
  return readExistingToken(path, options);
}

async function readExistingToken(path: string, options: TokenOptions): Promise<string> {
  let mode: number;
  let text: string;
  try {
    mode = (await stat(path)).mode;
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new MigpoolError('RUNTIME', `cannot read the token file ${path}: ${errnoOf(e) ?? (e as Error).message}; check its owner and permissions`);
  }
  if ((mode & 0o077) !== 0) {
    try {
      await chmod(path, 0o600);
    } catch (e) {
      throw new MigpoolError(
        'RUNTIME',
        `the token file ${path} is readable by other users (mode ${(mode & 0o777).toString(8)}) and cannot be made private: ${errnoOf(e) ?? (e as Error).message}; run \`chmod 600 ${path}\``,
      );
    }
    options.onWarning?.(`the token file ${path} was readable by other users (mode ${(mode & 0o777).toString(8)}); made it 0600. Delete it and restart to issue a new token if it may have leaked`);
  }
  return checkToken(text, path);
}

/**
 * Reads the token of a data dir without creating one (what the CLI client does).
 * Missing file: BAD_INPUT saying to pass --token or use the service's data dir.
 */
export async function readToken(dataDir: string): Promise<string> {
  const path = tokenPath(dataDir);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') {
      throw badInput(`no token in ${dataDir} (${path} is missing): pass --token, or --data-dir with the directory \`migpool serve\` uses`);
    }
    throw badInput(`cannot read the token file ${path}: ${errnoOf(e) ?? (e as Error).message}; run the command as the user that runs \`migpool serve\`, or pass --token`);
  }
  return checkToken(text, path);
}

/** Where a running service listens, as kept in `<dataDir>/server.json`. */
export interface ServerInfo {
  /** Base URL of the HTTP API, e.g. `http://127.0.0.1:8470`. */
  readonly url: string;
  /** Process id of the service. */
  readonly pid: number;
}

/** Writes `<dataDir>/server.json` (atomically: a temporary file renamed into place). */
export async function writeServerInfo(dataDir: string, info: ServerInfo): Promise<void> {
  const path = join(dataDir, SERVER_INFO_FILE);
  const temp = `${path}.${process.pid}.tmp`;
  try {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await writeFile(temp, `${JSON.stringify({ url: info.url, pid: info.pid }, null, 2)}\n`, { mode: 0o644 });
    await rename(temp, path);
  } catch (e) {
    await unlink(temp).catch(() => undefined);
    throw new MigpoolError('RUNTIME', `cannot write ${path}: ${errnoOf(e) ?? (e as Error).message}; pass --data-dir with a writable directory`);
  }
}

/** Removes `<dataDir>/server.json` (on shutdown); a missing file is fine. */
export async function removeServerInfo(dataDir: string): Promise<void> {
  await rm(join(dataDir, SERVER_INFO_FILE), { force: true });
}

/**
 * Reads `<dataDir>/server.json`. RUNTIME error (exit 3) when there is none: "no migpool service
 * found in DIR: start one with `migpool serve`", or when it is not valid.
 */
export async function readServerInfo(dataDir: string): Promise<ServerInfo> {
  const path = join(dataDir, SERVER_INFO_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') throw new MigpoolError('RUNTIME', `no migpool service found in ${dataDir}: start one with \`migpool serve\` (or pass --url)`);
    throw new MigpoolError('RUNTIME', `cannot read ${path}: ${errnoOf(e) ?? (e as Error).message}; pass --url instead`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = null;
  }
  const info = value as Partial<ServerInfo> | null;
  if (info === null || typeof info !== 'object' || typeof info.url !== 'string' || !/^https?:\/\//.test(info.url) || typeof info.pid !== 'number') {
    throw new MigpoolError('RUNTIME', `${path} is not a valid server file (expected {"url": "http://...", "pid": N}): restart \`migpool serve\`, or pass --url`);
  }
  return { url: info.url, pid: info.pid };
}
