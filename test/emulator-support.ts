// Shared by the emulator tests: plain fetch over loopback (not the client, so the emulator is
// checked on its own), and the fixed clock most tests use: noon UTC on the day Europe/Stockholm
// moves to summer time.
import { afterAll, beforeAll } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../src/emulator/server.js';

export const NOON = Date.parse('2026-03-29T12:00:00Z');
export const API = '/platform/v2';

export interface Answer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface Api {
  get<T = any>(path: string, query?: Record<string, string>): Promise<Answer<T>>;
  send<T = any>(method: 'POST' | 'PUT' | 'GET' | 'DELETE' | 'PATCH', path: string, body?: unknown): Promise<Answer<T>>;
}

/** Requests against `emulator` with `key` as the Authorization header (no header when undefined). */
export function api(emulator: Emulator, key: string | undefined): Api {
  const headers = (extra: Record<string, string> = {}) =>
    key === undefined ? extra : { authorization: key, ...extra };
  const answer = async (response: Response): Promise<Answer> => {
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  };
  return {
    async get(path, query = {}) {
      const url = `${emulator.url}${API}${path}?${new URLSearchParams(query)}`;
      return answer(await fetch(url, { headers: headers() }));
    },
    async send(method, path, body) {
      const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      return answer(
        await fetch(`${emulator.url}${API}${path}`, {
          method,
          headers: headers({ 'content-type': 'application/json' }),
          body: payload,
        }),
      );
    },
  };
}

/** An emulator with demo sites on the fixed clock. */
export function startTestEmulator(options: Partial<EmulatorOptions> = {}): Promise<Emulator> {
  return startEmulator({ apiKeys: ['k1', 'k2'], sites: 6, seed: 7, now: () => NOON, ...options });
}

/** Requests with key k1 to a test emulator started before the file's tests and closed after them. */
export function k1ForFile(): Api {
  let emulator: Emulator | undefined;
  let k1: Api | undefined;
  beforeAll(async () => {
    emulator = await startTestEmulator();
    k1 = api(emulator, 'k1');
  });
  afterAll(() => emulator?.close());
  return { get: (path, query) => k1!.get(path, query), send: (method, path, body) => k1!.send(method, path, body) };
}

/** A fetched site list as `{ name: site }`, and the first site of a type (and mount). */
export async function sitesByKind(client: Api) {
  const { body: sites } = await client.get<any[]>('/sites');
  const find = (type: string, mount?: string) =>
    sites.find((site) => site.type === type && (!mount || site.assets.every((asset: any) => asset.mount === mount)));
  return {
    sites,
    solarFixed: find('solar', 'fixed'),
    solarTracking: find('solar', 'single_axis_tracking'),
    wind: find('wind'),
    load: find('load'),
  };
}
