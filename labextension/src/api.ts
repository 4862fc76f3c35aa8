/**
 * The server extension's read-only REST API (`<base_url>nbagent/api/`), through Jupyter's
 * authenticated connection settings.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { IBundle } from './paint';

export interface ISession {
  /** The session file's path under the server root, or for a database's session that database's name. */
  file: string;
  /** The database the session is in, when the server serves it from one (by name: never a URL). */
  db?: string;
  id: string;
  title: string | null;
  first_prompt: string;
  label: string;
  turns: number;
  events: number;
  last_time: number | null;
  created_at: number;
  model: string | null;
  notebook: string | null;
  /** A fork's purpose (`"attribution"` for an ablation run of "Which context mattered?"). */
  purpose?: string | null;
  /** A fork's last replay in words ("replay of turn 2: note seen by step 1, steer dropped"). */
  replay_text?: string | null;
}

/** A session file nbagent could not read: its path and why. */
export interface IUnreadable {
  file: string;
  error: string;
}

export type Listing = (ISession | IUnreadable)[];

export type Params = Record<string, string | number>;

/** Where a session is: a session file (`file`), or a database the server serves (`db`, its name). */
export type Source = { file: string; db?: string };

/** The query naming `source`: `db=NAME` for a database's session, else `file=PATH`. */
export function where(source: Source | string): Params {
  if (typeof source === 'string') {
    return { file: source };
  }
  return source.db ? { db: source.db } : { file: source.file };
}

let defaultSettings: ServerConnection.ISettings | undefined;

/** The URL of `path` under the API (`<baseUrl>nbagent/api/sessions/`), `params` as its query. */
export function apiUrl(baseUrl: string, path: string, params: Params): string {
  const query = URLExt.objectToQueryString(
    Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)]))
  );
  return URLExt.join(baseUrl, 'nbagent', 'api', 'sessions', path) + query;
}

/**
 * GET `path` of the API. A refusal is a `ServerConnection.ResponseError` whose message is the
 * server's (`{"message": ...}`, else the status line); an unreachable server is a
 * `ServerConnection.NetworkError` naming the URL.
 */
export async function get(
  path: string,
  params: Params,
  settings: ServerConnection.ISettings = (defaultSettings ??= ServerConnection.makeSettings())
): Promise<Response> {
  const url = apiUrl(settings.baseUrl, path, params);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, {}, settings);
  } catch (error) {
    const cause = (error as Error).message;
    throw new ServerConnection.NetworkError(new TypeError(`cannot reach the Jupyter server at ${url}: ${cause}`));
  }
  if (!response.ok) {
    throw await ServerConnection.ResponseError.create(response);
  }
  return response;
}

/** Pages of a listing one call follows at most (200 sessions each: 10,000 sessions). */
export const MAX_LISTING_PAGES = 50;

/**
 * Every page of a session listing: the server answers one page at a time and names the next in
 * its `Link: <…>; rel="next"` header. A session listed twice (the folder changed between pages)
 * is kept once.
 */
export async function listingPages(params: Params, settings?: ServerConnection.ISettings): Promise<Listing> {
  const rows: Listing = [];
  const seen = new Set<string>();
  let offset: number | null = 0;
  for (let page = 0; offset !== null && page < MAX_LISTING_PAGES; page++) {
    const response: Response = await get('', offset ? { ...params, offset } : params, settings);
    for (const row of (await response.json()) as Listing) {
      const key = `${row.file}\u0000${'id' in row ? row.id : ''}`;
      if (!seen.has(key)) {
        seen.add(key);
        rows.push(row);
      }
    }
    offset = nextOffset(response.headers.get('Link'));
  }
  return rows;
}

/** The `offset` of the page a `Link` header names as `rel="next"`, or null when there is none. */
export function nextOffset(link: string | null): number | null {
  const next = /<([^>]*)>\s*;\s*rel="?next"?/.exec(link ?? '')?.[1];
  const offset = next === undefined ? null : new URL(next, 'http://x/').searchParams.get('offset');
  return offset === null || !/^\d+$/.test(offset) ? null : Number(offset);
}

/** The sessions of the session files in `folder` (relative to the server root). */
export async function listSessions(folder: string): Promise<Listing> {
  return listingPages({ path: folder });
}

/** The sessions of one session file or database (its rows as the listing shows them). */
export async function fileSessions(source: Source | string): Promise<Listing> {
  return listingPages(where(source));
}

/** The sessions of a database the server serves, by its name. */
export async function databaseSessions(name: string): Promise<Listing> {
  return listingPages({ db: name });
}

/**
 * The names of the databases the server serves (`c.NbagentServer.databases`): names only, their
 * addresses stay on the server.
 */
export async function listDatabases(
  settings: ServerConnection.ISettings = (defaultSettings ??= ServerConnection.makeSettings())
): Promise<string[]> {
  const url = URLExt.join(settings.baseUrl, 'nbagent', 'api', 'databases');
  const response = await ServerConnection.makeRequest(url, {}, settings);
  if (!response.ok) {
    throw await ServerConnection.ResponseError.create(response);
  }
  return ((await response.json()) as { name: string }[]).map(d => d.name);
}

/** The timeline bundle of a session, or `null` when `known` (a bundle's seq) is still current. */
export async function fetchTimeline(source: Source | string, id: string, known?: number): Promise<IBundle | null> {
  const params: Params = where(source);
  if (known !== undefined) {
    params.known = known;
  }
  const response = await get(`${encodeURIComponent(id)}/timeline`, params);
  return response.status === 204 ? null : response.json();
}

/**
 * Turn `turn` of a session as a live cell's output shows it (its MIME bundle: the timeline bundle,
 * `text/html` and `text/plain`), headed `headline`.
 */
export async function fetchTurnOutput(
  source: Source | string,
  id: string,
  turn: number,
  headline: string | null
): Promise<Record<string, unknown>> {
  const params: Params = { ...where(source), turn, output: 'cell' };
  if (headline !== null) {
    params.headline = headline;
  }
  const response = await get(`${encodeURIComponent(id)}/timeline`, params);
  return response.json();
}

/** The transcript of a session: Markdown (`md`) or a standalone HTML page (`html`). */
export async function fetchTranscript(
  source: Source | string,
  id: string,
  format: 'md' | 'html' = 'md'
): Promise<{ name: string; text: string }> {
  const response = await get(`${encodeURIComponent(id)}/transcript`, { ...where(source), format });
  const name = attachmentName(response.headers.get('Content-Disposition') ?? '') ?? `transcript.${format}`;
  return { name, text: await response.text() };
}

/**
 * The file name a `Content-Disposition` header gives (RFC 6266): its UTF-8 `filename*`, else its
 * ASCII `filename`, else null.
 */
export function attachmentName(disposition: string): string | null {
  const extended = /;\s*filename\*=UTF-8''([^;\s]+)/i.exec(disposition)?.[1];
  if (extended !== undefined) {
    try {
      return decodeURIComponent(extended);
    } catch {
      // a malformed escape: fall back to the plain name
    }
  }
  return /;\s*filename="([^"]+)"/.exec(disposition)?.[1] ?? null;
}

/** Save `text` as a download named `name` in the browser. */
export function download(name: string, text: string, mime = 'text/markdown'): void {
  const url = URL.createObjectURL(new Blob([text], { type: `${mime};charset=utf-8` }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.style.display = 'none';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** `3 min ago`, `yesterday`, a date: how long ago Unix ms `time` was. */
export function ago(time: number | null, now = Date.now()): string {
  if (!time) {
    return 'no activity';
  }
  const s = Math.max(0, Math.round((now - time) / 1000));
  if (s < 60) {
    return 'just now';
  }
  if (s < 3600) {
    return `${Math.round(s / 60)} min ago`;
  }
  if (s < 86400) {
    return `${Math.round(s / 3600)} h ago`;
  }
  return new Date(time).toLocaleDateString();
}
