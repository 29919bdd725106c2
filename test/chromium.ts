// A page as a person sees it: Debian's headless chromium (as root, --no-sandbox), driven over the
// DevTools protocol through undici's WebSocket. A test opens a file at a window width and reads
// what the browser laid out, fetched and logged.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WebSocket } from 'undici';

interface Message {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
}

/** What a page did while it loaded: the URLs it requested and what it logged or threw. */
export interface PageLoad {
  requests: string[];
  logged: string[];
}

export interface Browser {
  /** Opens `file` in a window `width` CSS pixels wide; resolves once its load event fired. */
  open(file: string, width: number): Promise<PageLoad>;
  /** The value of `expression` (a JSON-serialisable result) in the open page. */
  evaluate<T>(expression: string): Promise<T>;
  close(): Promise<void>;
}

/** Starts a headless chromium with a profile of its own, attached to its first page. */
export async function startBrowser(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'efsync-chromium-'));
  const chrome = spawn(
    'chromium',
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--remote-debugging-port=0',
      `--user-data-dir=${profile}`,
      'about:blank',
    ],
    // A process group of its own: its helpers (zygote, renderers) die with it, not after.
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  try {
    const port = new URL(await devToolsUrl(chrome)).port;
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
      type: string;
      webSocketDebuggerUrl: string;
    }[];
    const page = targets.find((t) => t.type === 'page');
    if (!page) throw new Error('chromium opened no page');
    return await attach(page.webSocketDebuggerUrl, chrome, profile);
  } catch (error) {
    killGroup(chrome);
    removeProfile(profile);
    throw error;
  }
}

function devToolsUrl(chrome: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    chrome.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk;
      const found = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
      if (found) resolve(found[1]);
    });
    chrome.on('exit', (code) => reject(new Error(`chromium exited (${code}) before listening:\n${stderr}`)));
  });
}

async function attach(url: string, chrome: ChildProcess, profile: string): Promise<Browser> {
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve);
    socket.addEventListener('error', reject);
  });
  let next = 0;
  const waiting = new Map<number, (message: Message) => void>();
  const events: Message[] = [];
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data)) as Message;
    if (message.id === undefined) events.push(message);
    else waiting.get(message.id)?.(message);
  });
  const send = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = ++next;
      waiting.set(id, (message) => {
        waiting.delete(id);
        if (message.error) reject(new Error(`${method}: ${message.error.message}`));
        else resolve(message.result ?? {});
      });
      socket.send(JSON.stringify({ id, method, params }));
    });
  for (const domain of ['Page', 'Runtime', 'Log', 'Network']) await send(`${domain}.enable`);

  return {
    async open(file, width) {
      await send('Emulation.setDeviceMetricsOverride', { width, height: 900, deviceScaleFactor: 1, mobile: false });
      events.length = 0;
      await send('Page.navigate', { url: pathToFileURL(file).href });
      while (!events.some((e) => e.method === 'Page.loadEventFired')) await new Promise((r) => setTimeout(r, 20));
      return {
        requests: events
          .filter((e) => e.method === 'Network.requestWillBeSent')
          .map((e) => (e.params as { request: { url: string } }).request.url),
        logged: events
          .filter((e) =>
            ['Log.entryAdded', 'Runtime.consoleAPICalled', 'Runtime.exceptionThrown'].includes(e.method ?? ''),
          )
          .map((e) => JSON.stringify(e.params)),
      };
    },
    async evaluate<T>(expression: string) {
      const reply = await send('Runtime.evaluate', { expression, returnByValue: true });
      const thrown = reply.exceptionDetails as { text: string } | undefined;
      if (thrown) throw new Error(`in the page: ${thrown.text}`);
      return (reply.result as { value: T }).value;
    },
    async close() {
      socket.close();
      const exited = new Promise((resolve) => chrome.once('exit', resolve));
      killGroup(chrome);
      await exited;
      removeProfile(profile);
    },
  };
}

/** SIGKILL to chromium's whole process group (it was started detached, as its leader). */
function killGroup(chrome: ChildProcess): void {
  try {
    if (chrome.pid !== undefined) process.kill(-chrome.pid, 'SIGKILL');
  } catch {
    chrome.kill('SIGKILL'); // the group is gone already
  }
}

/** The profile folder, retried while a helper that outlived the kill still writes into it. */
function removeProfile(profile: string): void {
  rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
}
