/**
 * One alert's change of state to one webhook: a generic JSON body or a Slack-compatible one,
 * signed with the webhook's shared secret when it has one, retried on 429, 5xx and no answer.
 * Neither the URL (a Slack URL holds its secret) nor the secret appears in what this returns.
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import type { Config } from '../config.js';
import { ConfigError } from '../errors.js';

export type WebhookConfig = Config['alerts']['webhooks'][number];

export interface AlertChange {
  key: string;
  kind: 'run' | 'stale' | 'missed' | 'drift';
  firing: boolean;
  summary: string;
  labels: Record<string, string>;
  at: number;
}

export interface Delivery {
  attempts: number;
  ok: boolean;
  status: number | null;
  error: string | null;
}

export interface DeliveryPolicy {
  retries: number;
  backoffMs: number;
  timeoutMs: number;
}

export function webhookBody(hook: WebhookConfig, change: AlertChange): string {
  const state = change.firing ? 'firing' : 'resolved';
  if (hook.format === 'slack')
    return JSON.stringify({
      text: `${change.firing ? ':rotating_light: [FIRING]' : ':white_check_mark: [RESOLVED]'} efsync: ${change.summary}`,
    });
  return JSON.stringify({
    source: 'efsync',
    alert: change.key,
    kind: change.kind,
    state,
    summary: change.summary,
    labels: change.labels,
    at: new Date(change.at).toISOString(),
  });
}

export async function deliver(hook: WebhookConfig, change: AlertChange, policy: DeliveryPolicy): Promise<Delivery> {
  const body = webhookBody(hook, change);
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'efsync' };
  const secret = readSecret(hook);
  if (secret !== null)
    headers['x-efsync-signature'] = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  let last: Delivery = { attempts: 0, ok: false, status: null, error: null };
  for (let attempt = 1; attempt <= policy.retries + 1; attempt++) {
    if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, policy.backoffMs * 2 ** (attempt - 2)));
    last = { attempts: attempt, ...(await post(hook.url, headers, body, policy.timeoutMs)) };
    if (last.ok || (last.status !== null && last.status < 500 && last.status !== 429)) return last;
  }
  return last;
}

async function post(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<Omit<Delivery, 'attempts'>> {
  try {
    const response = await request(url, {
      method: 'POST',
      headers,
      body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body.dump();
    const ok = response.statusCode >= 200 && response.statusCode <= 299;
    return { ok, status: response.statusCode, error: ok ? null : `HTTP ${response.statusCode}` };
  } catch (error) {
    // Only the error's code or name: undici's messages may quote the URL.
    const code = (error as { code?: string }).code ?? (error as Error).name;
    return { ok: false, status: null, error: `no answer (${code})` };
  }
}

function readSecret(hook: WebhookConfig): string | null {
  if (hook.secret_file === null) return null;
  try {
    const secret = readFileSync(hook.secret_file, 'utf8').trim();
    if (secret) return secret;
  } catch {
    // said below, as an empty file is
  }
  throw new ConfigError(`alerts.webhooks ${hook.name}: secret_file ${hook.secret_file} is missing or empty`);
}
