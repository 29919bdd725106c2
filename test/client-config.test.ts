// clientFromConfig (src/service.ts): the `service` section of config/efsync.yaml becomes the client's options.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFromConfig } from '../src/service.js';
import { loadConfig } from '../src/config.js';
import { json, scriptedServer, type ScriptedServer } from './client-support.js';

let server: ScriptedServer;
const dir = mkdtempSync(join(tmpdir(), 'efsync-client-config-'));

beforeAll(async () => {
  server = await scriptedServer((request, _n, res) => {
    if (request.url.startsWith('/platform/v2/sites'))
      return json(res, 503, { errors: [{ field: '(server)', message: 'down' }] });
    return json(res, 200, {
      model_id: 'm1',
      model_version: 1,
      model_name: 'ai',
      model_label: 'ai',
      priority: 1,
      as_of: '2026-06-15T00:00:00Z',
      forecast: [],
      valid_time: [],
      capacity: [],
    });
  });
});

afterAll(async () => {
  await server.close();
});

function configFile(yaml: string) {
  const file = join(dir, `efsync-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, yaml);
  return loadConfig(file, {});
}

describe('clientFromConfig', () => {
  it('uses base_url, the retry count and the wire name of the fill parameter', async () => {
    const config = configFile(
      [
        'service:',
        `  base_url: ${server.url}`,
        '  output_fill_param: gap_fill',
        '  connections: 2',
        '  timeouts: { connect: 2s, headers: 5s, body: 5s }',
        '  retries: { attempts: 2, base_delay: 1ms, max_delay: 2ms, retry_after_max: 1s }',
      ].join('\n'),
    );
    const client = clientFromConfig(config, 'config-key');
    try {
      await client.getModelOutput('m1', { fill: 'disabled' });
      expect(server.requests.at(-1)!.url).toBe('/platform/v2/models/m1/output?gap_fill=disabled');
      const before = server.requests.length;
      const error = await client.listSites().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ kind: 'http', status: 503, attempts: 3 });
      expect(server.requests.length - before).toBe(3);
    } finally {
      await client.close();
    }
  });

  it('says what to set when no base URL is configured', () => {
    const config = configFile('service:\n  base_url: null\n');
    expect(() => clientFromConfig(config, 'k')).toThrow(/service\.base_url is not set/);
  });

  it('takes overrides, e.g. the URL of an embedded emulator', async () => {
    const config = configFile('service:\n  base_url: null\n');
    const client = clientFromConfig(config, 'k', undefined, { baseUrl: server.url, retries: { attempts: 0 } });
    try {
      const before = server.requests.length;
      await expect(client.listSites()).rejects.toMatchObject({ status: 503, attempts: 1 });
      expect(server.requests.length - before).toBe(1);
    } finally {
      await client.close();
    }
  });
});
