// The dashboard talks to the same /v1 API as every client, authenticated
// by the session cookie; state-changing calls carry the CSRF token.

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
    public details?: Record<string, unknown>,
    /** The answer's X-Request-Id: the server logs a 5xx under it (DESIGN 5). */
    public requestId?: string,
    /** The wait the answer's Retry-After asks for (429, 503), in ms; 0 without one. */
    public retryAfterMs = 0,
  ) {
    super(message);
  }
}

/** What to give the server's operator for a server error: its request id. */
export function requestIdNote(e: ApiError): string {
  return e.status >= 500 && e.requestId ? ` Request id ${e.requestId}: give it to the server's operator.` : '';
}

let csrf = '';
let onUnauthorized: (e: ApiError) => void = () => {};

export function setCsrf(token: string): void {
  csrf = token;
}

export function setUnauthorizedHandler(f: (e: ApiError) => void): void {
  onUnauthorized = f;
}

export interface CallOptions {
  headers?: Record<string, string>;
  raw?: boolean; // answer the body as text
}

export async function call<T = any>(method: string, path: string, body?: unknown, opts: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
  if (method !== 'GET' && csrf) headers['X-CSRF-Token'] = csrf;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
    });
  } catch {
    throw new ApiError(0, 'NETWORK', 'the server cannot be reached');
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  if (res.ok && opts.raw) return text as T;
  const j = parsed(res, text);
  if (!res.ok) {
    const err = apiError(res, j);
    if (res.status === 401 && !path.startsWith('/v1/auth/session')) onUnauthorized(err);
    // A job that outlasted the server's wait goes on: its answer comes
    // from GET /v1/jobs/{id}, as SPEC 7 tells every client to fetch it.
    const jobId = err.details?.job_id;
    if (err.code === 'JOB_TIMEOUT' && typeof jobId === 'string' && !path.startsWith('/v1/jobs/')) {
      return awaitJob<T>(jobId, err);
    }
    throw err;
  }
  return j as T;
}

/** How long the dashboard follows a job after its 504 JOB_TIMEOUT. */
const jobPatience = 15 * 60 * 1000;

/** Answers to a poll that say nothing of the job: the poll was over the
 * rate limit (429), or the server is away behind its proxy (502-504). */
const pollRefused = (status: number) => status === 429 || (status >= 502 && status <= 504);

/** Polls GET /v1/jobs/{id} until the job answers (202: still running),
 * then answers or throws as its request would have; after jobPatience the
 * timeout is thrown. */
async function awaitJob<T>(id: string, timeout: ApiError): Promise<T> {
  const until = Date.now() + jobPatience;
  let pause = 0; // a refused poll's Retry-After
  for (let wait = 250; Date.now() < until; wait = Math.min(wait * 2, 2000)) {
    await new Promise((r) => setTimeout(r, Math.max(wait, pause)));
    pause = 0;
    let res: Response;
    try {
      res = await fetch(`/v1/jobs/${encodeURIComponent(id)}`, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
    } catch {
      continue; // the server is away for a moment: the job goes on
    }
    if (res.status === 202) continue;
    // A refused poll is asked again (SPEC 7: retry 429 and 5xx, honouring
    // Retry-After), as one the network lost is: the job goes on meanwhile.
    // A wait longer than the patience left ends the follow with its error.
    if (pollRefused(res.status)) {
      const after = retryAfterMs(res.headers.get('Retry-After'));
      if (Date.now() + after < until) {
        pause = after;
        continue;
      }
    }
    const j = parsed(res, await res.text());
    if (!res.ok) {
      const err = apiError(res, j);
      // The session ended while the job ran: the sign-in page, as for any call.
      if (res.status === 401) onUnauthorized(err);
      throw err;
    }
    return j as T;
  }
  throw timeout;
}

/** The JSON of an answer's body, or a BAD_RESPONSE error. */
function parsed(res: Response, text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(res.status, 'BAD_RESPONSE', `unexpected answer from the server (HTTP ${res.status})`);
  }
}

/** The error an answer's envelope names. */
function apiError(res: Response, j: any): ApiError {
  const e = j?.error ?? {};
  return new ApiError(res.status, e.code ?? 'ERROR', e.message ?? res.statusText, e.details, res.headers.get('X-Request-Id') ?? undefined,
    retryAfterMs(res.headers.get('Retry-After')));
}

/** Retry-After in ms: delay-seconds or an HTTP date (RFC 9110); 0 when absent or past. */
export function retryAfterMs(v: string | null): number {
  if (!v) return 0;
  const s = Number(v);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? 0 : Math.max(0, at - Date.now());
}

export const get = <T = any>(path: string) => call<T>('GET', path);
export const post = <T = any>(path: string, body?: unknown) => call<T>('POST', path, body);
export const del = <T = any>(path: string) => call<T>('DELETE', path);
