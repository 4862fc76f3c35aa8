/**
 * The session tab's windows of turns (`timeline?window=K`, see nbagent/labserver/window.py): the
 * newest turns of a session without the server folding its whole log, earlier turns a page at
 * a time, the turns around turn N and those after it (nbagent/labserver/jump.py), and a search
 * over turn titles (`timeline?find=TEXT`).
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { Source, where } from './api';
import { IBundle } from './paint';

/** A window's bundle: the turns from `first_turn` on, and how long the log was when read. */
export interface IWindowBundle extends IBundle {
  /** The first turn the bundle holds; earlier turns come with `before`. */
  first_turn: number;
  /** Events in the log when the server read it (`seq` is how far it has folded). */
  log_seq: number;
  /** The last turn a page (`before`, `turn`, `after`) holds. */
  last_turn?: number;
}

export interface IWindowQuery {
  /** Turns asked for: the newest ones, those before turn `before`, around turn `turn`, or after turn `after`. */
  window: number;
  before?: number;
  turn?: number;
  after?: number;
  /** The `seq` of the bundle the caller holds: the answer is `null` while it is current. */
  known?: number;
  /**
   * A database's session only: seconds the server may wait for the session to move past `known`
   * before it answers (`null` if it did not), through its one listener of that database.
   */
  wait?: number;
}

/** A window of a session's timeline, or `null` when `known` is still current. */
export async function fetchWindow(
  source: Source | string,
  id: string,
  query: IWindowQuery
): Promise<IWindowBundle | null> {
  const params: Record<string, string> = { ...stringParams(source), window: String(query.window) };
  for (const key of ['before', 'turn', 'after', 'known', 'wait'] as const) {
    if (query[key] !== undefined) {
      params[key] = String(query[key]);
    }
  }
  const response = await timeline(id, params);
  return response.status === 204 ? null : response.json();
}

/** A turn whose title holds the text searched for. */
export interface ITurnMatch {
  turn: number;
  title: string;
}

/** A page of a search over turn titles: `next` is where to go on (`after`), `null` at the end. */
export interface IFound {
  matches: ITurnMatch[];
  next: number | null;
  /** The session's turns. */
  turns: number;
}

/** The turns after turn `after` whose title holds `text` (case-blind), a bounded page of them. */
export async function findTurns(
  source: Source | string,
  id: string,
  text: string,
  after = 0,
  limit = 20
): Promise<IFound> {
  const params = { ...stringParams(source), find: text, after: String(after), limit: String(limit) };
  return (await timeline(id, params)).json();
}

function stringParams(source: Source | string): Record<string, string> {
  return Object.fromEntries(Object.entries(where(source)).map(([k, v]) => [k, String(v)]));
}

async function timeline(id: string, params: Record<string, string>): Promise<Response> {
  const settings = ServerConnection.makeSettings();
  const url =
    URLExt.join(settings.baseUrl, 'nbagent', 'api', 'sessions', encodeURIComponent(id), 'timeline') +
    URLExt.objectToQueryString(params);
  const response = await ServerConnection.makeRequest(url, {}, settings);
  if (!response.ok) {
    throw await ServerConnection.ResponseError.create(response);
  }
  return response;
}
