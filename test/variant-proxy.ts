// A stand-in for the real service in front of the emulator: every request is forwarded and each
// JSON answer can be rewritten into one of the variants the service's public pages document
// (a null, a missing column, an empty entry, FastAPI's own error body), or into a malformed one.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Answer {
  status: number;
  body: unknown;
}

/** Returns the answer to send instead, or undefined to pass it on unchanged. */
export type Rewrite = (request: { method: string; path: string }, answer: Answer) => Answer | undefined;

export interface VariantProxy {
  url: string;
  close(): Promise<void>;
}

export async function variantProxy(target: string, rewrite: Rewrite): Promise<VariantProxy> {
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string' && name !== 'host' && name !== 'content-length') headers[name] = value;
    }
    const upstream = await fetch(new URL(req.url ?? '/', target), {
      method: req.method,
      headers,
      body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
    });
    const text = await upstream.text();
    let answer: Answer = { status: upstream.status, body: text === '' ? null : JSON.parse(text) };
    answer = rewrite({ method: req.method ?? 'GET', path: new URL(req.url ?? '/', target).pathname }, answer) ?? answer;
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The path's kind: `sites`, `site`, `models`, `forecast`, `actual`, `output`, … (the last segment that is not an id). */
export function endpointOf(path: string): string {
  const parts = path.replace(/^\/platform\/v2\//, '').split('/');
  if (parts.length === 1) return parts[0];
  if (parts.length === 2) return parts[0] === 'sites' ? 'site' : 'model';
  return parts.slice(2).join('/');
}
