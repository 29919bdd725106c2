// The one error every client call fails with. Callers branch on `kind` and `status`; the message
// is one readable line naming the endpoint and the id. The API key is never part of it.
import type { ErrorItem } from './schemas.js';

export type ServiceErrorKind = 'http' | 'network' | 'timeout' | 'malformed' | 'aborted';

export interface ServiceErrorDetails {
  kind: ServiceErrorKind;
  /** e.g. `GET /platform/v2/sites/{site_id}/forecast` */
  endpoint: string;
  /** What went wrong, without the endpoint prefix (the constructor adds it). */
  detail: string;
  status?: number | null;
  siteId?: string;
  modelId?: string;
  errors?: ErrorItem[];
  /** For a malformed answer: where in the body, e.g. `as_of` or `forecast[3]`. */
  fieldPath?: string;
  attempts?: number;
  code?: string;
  /** True when another attempt could succeed (429, 5xx, connection trouble, timeouts). */
  retryable?: boolean;
  /** How long the service asked us to wait (Retry-After, in ms), when it said. */
  retryAfterMs?: number | null;
  /** The underlying error (kept non-enumerable, so serialising the error stays small). */
  cause?: unknown;
}

export class ServiceError extends Error {
  override readonly name = 'ServiceError';
  readonly kind: ServiceErrorKind;
  readonly status: number | null;
  readonly endpoint: string;
  readonly siteId?: string;
  readonly modelId?: string;
  readonly errors: ErrorItem[];
  readonly fieldPath?: string;
  /** Attempts made before giving up (1 when nothing was retried). */
  readonly attempts: number;
  /** The transport error code behind a 'network' or 'timeout' failure (ECONNRESET, UND_ERR_SOCKET, ...). */
  readonly code?: string;
  readonly retryable: boolean;
  readonly retryAfterMs: number | null;
  /** The message without the endpoint and id prefix. */
  readonly detail: string;

  constructor(details: ServiceErrorDetails) {
    super(composeMessage(details), details.cause === undefined ? undefined : { cause: details.cause });
    this.kind = details.kind;
    this.status = details.status ?? null;
    this.endpoint = details.endpoint;
    if (details.siteId !== undefined) this.siteId = details.siteId;
    if (details.modelId !== undefined) this.modelId = details.modelId;
    this.errors = details.errors ?? [];
    if (details.fieldPath !== undefined) this.fieldPath = details.fieldPath;
    this.attempts = details.attempts ?? 1;
    if (details.code !== undefined) this.code = details.code;
    this.retryable = details.retryable ?? false;
    this.retryAfterMs = details.retryAfterMs ?? null;
    this.detail = details.detail;
  }

  /** A plain object for logs and `--json` output (never the key: it is never held here). */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      kind: this.kind,
      status: this.status,
      endpoint: this.endpoint,
      siteId: this.siteId,
      modelId: this.modelId,
      errors: this.errors,
      attempts: this.attempts,
      code: this.code,
      message: this.message,
    };
  }
}

/** `GET /platform/v2/sites/{site_id} (site s1): HTTP 404: site_id: not found` */
function composeMessage(details: ServiceErrorDetails): string {
  const ids = [
    details.siteId !== undefined ? `site ${details.siteId}` : null,
    details.modelId !== undefined ? `model ${details.modelId}` : null,
  ].filter((part) => part !== null);
  const where = ids.length > 0 ? `${details.endpoint} (${ids.join(', ')})` : details.endpoint;
  return `${where}: ${details.detail}`;
}

/**
 * An error after which the client sends nothing more: every other call would fail the same way,
 * so the client fails every call in flight, queued or to come with this one error, and a run ends
 * on it (exit 4) instead of failing site by site.
 */
export class ClientStoppedError extends ServiceError {}

/** The service refused the API key (401, or 403): the key is wrong, revoked or lacks the right. */
export class KeyRejectedError extends ClientStoppedError {
  constructor(details: ServiceErrorDetails, reason: string) {
    super(details);
    const ids = [details.siteId && `site ${details.siteId}`, details.modelId && `model ${details.modelId}`].filter(
      Boolean,
    );
    this.message = `the service rejected the API key (${this.status}): ${reason || 'no reason given'} (${[details.endpoint, ...ids].join(', ')})`;
  }
}

/**
 * The service has not answered for `service.unreachable_after`: every request in that time failed
 * for want of it (no connection, no answer in time, a gateway's 502-504). `details` is the last
 * such failure.
 */
export class ServiceUnreachableError extends ClientStoppedError {
  constructor(details: ServiceErrorDetails, lastedMs: number) {
    super(details);
    this.message = `the service has not answered for ${seconds(lastedMs)} (service.unreachable_after): every request failed; the last: ${composeMessage(details)}`;
  }
}

/** `1.5 s`: a wait or a span in an error's message. */
export function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

export function isServiceError(error: unknown): error is ServiceError {
  return error instanceof ServiceError;
}
