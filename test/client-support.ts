// Shared by the client tests: a logger that keeps its lines in memory (to read what was logged),
// a bare HTTP server that answers with what a test scripts (for wire forms and failure sequences
// the emulator does not produce on demand), a client on such a server that each test closes, and
// the ServiceError a call must end in.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { afterEach, expect } from 'vitest';
import { ServiceClient, type ServiceClientOptions } from '../src/api/client.js';
import { ServiceError } from '../src/api/errors.js';

export interface MemoryLog {
  log: Logger;
  /** Every line written so far, as text. */
  text(): string;
  lines(): Record<string, unknown>[];
}

export function memoryLogger(level = 'debug'): MemoryLog {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const log = pino({ level }, sink);
  const text = () => chunks.join('');
  return {
    log,
    text,
    lines: () =>
      text()
        .split('\n')
        .filter((line) => line.trim())
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

export interface ScriptedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface ScriptedServer {
  url: string;
  requests: ScriptedRequest[];
  close(): Promise<void>;
}

/** `answer(request, n)` handles the n-th request (from 1). */
export async function scriptedServer(
  answer: (request: ScriptedRequest, n: number, res: ServerResponse) => void,
): Promise<ScriptedServer> {
  const requests: ScriptedRequest[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      requests.push(request);
      answer(request, requests.length, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** The ServiceError `promise` rejects with; the test fails if it resolves or rejects otherwise. */
export async function serviceFailure(promise: Promise<unknown>): Promise<ServiceError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ServiceError);
  return error as ServiceError;
}

export type ScriptedAnswer = (request: ScriptedRequest, n: number, res: ServerResponse) => void;

/**
 * Call in a describe block (or at file level): `serve(answer, options)` starts a scripted server
 * and a client on it with fast retries; both are closed after each test.
 */
export function scriptedClients(defaults: Partial<ServiceClientOptions> = {}) {
  let server: ScriptedServer | undefined;
  let client: ServiceClient | undefined;
  afterEach(async () => {
    await client?.close();
    await server?.close();
    client = server = undefined;
  });
  return async function serve(answer: ScriptedAnswer, options: Partial<ServiceClientOptions> = {}) {
    server = await scriptedServer(answer);
    client = new ServiceClient({
      baseUrl: server.url,
      apiKey: 'scripted',
      retries: { attempts: 3, baseDelay: 1, maxDelay: 2, retryAfterMax: 1000 },
      ...defaults,
      ...options,
    });
    return { server, client };
  };
}
