/**
 * The session tab's windows of turns (`timeline?window=K`, see nbagent/labserver/window.py): the
 * newest turns of a session without the server folding its whole log, and earlier turns a page at
 * a time.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { IBundle } from './paint';

/** A window's bundle: the turns from `first_turn` on, and how long the log was when read. */
export interface IWindowBundle extends IBundle {
  /** The first turn the bundle holds; earlier turns come with `before`. */
  first_turn: number;
  /** Events in the log when the server read it (`seq` is how far it has folded). */
  log_seq: number;
}

export interface IWindowQuery {
  /** Turns asked for: the newest ones, or those before turn `before`. */
  window: number;
  before?: number;
  /** The `seq` of the bundle the caller holds: the answer is `null` while it is current. */
  known?: number;
}

/** A window of a session's timeline, or `null` when `known` is still current. */
export async function fetchWindow(file: string, id: string, query: IWindowQuery): Promise<IWindowBundle | null> {
  const settings = ServerConnection.makeSettings();
  const params: Record<string, string> = { file, window: String(query.window) };
  if (query.before !== undefined) {
    params.before = String(query.before);
  }
  if (query.known !== undefined) {
    params.known = String(query.known);
  }
  const url =
    URLExt.join(settings.baseUrl, 'nbagent', 'api', 'sessions', encodeURIComponent(id), 'timeline') +
    URLExt.objectToQueryString(params);
  const response = await ServerConnection.makeRequest(url, {}, settings);
  if (!response.ok) {
    throw await ServerConnection.ResponseError.create(response);
  }
  return response.status === 204 ? null : response.json();
}
