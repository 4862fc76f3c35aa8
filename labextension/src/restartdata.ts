/**
 * The data side of showing a turn's true end after a kernel restart (restart.ts): which outputs show
 * a running turn, and what replaces one once the log has closed the turn. No DOM, no services.
 */

import { PathExt } from '@jupyterlab/coreutils';

import type { Source } from './api';
import { shown } from './widgets/painter.js';
import type { IBundle } from './paint';

/** The timeline bundle's MIME type (paint.ts's TIMELINE_MIME). */
export const TIMELINE_MIME = 'application/vnd.nbagent.timeline+json';

/**
 * Where a live bundle's session lives: its id and its SQLite file relative to the notebook's folder;
 * `file` is null for a session in a PostgreSQL database (the page then asks the databases the
 * server serves, by name, for the session: its id is unique).
 */
export interface ISessionRef {
  id: string;
  file: string | null;
}

/** A live bundle: one turn, with where its session lives. */
export interface ILiveBundle extends IBundle {
  session?: ISessionRef | null;
}

/** Milliseconds waited before each further look at a turn the log has not closed yet. */
export const RETRY_MS = [250, 500, 1000, 2000, 4000, 8000];

/** The running turn an output's data shows, with its session file (relative to the server root),
 * or `null` for a session in a database. */
export interface IRunningTurn {
  turn: number;
  id: string;
  file: string | null;
  bundle: ILiveBundle;
}

/** The running turn `data` (an output's MIME bundle) follows, or null (not a running live bundle). */
export function runningTurn(data: Record<string, unknown>, notebookPath: string): IRunningTurn | null {
  const bundle = data[TIMELINE_MIME] as ILiveBundle | undefined;
  const turn = bundle?.scope?.turn;
  const session = bundle?.session;
  if (
    !bundle ||
    bundle.status !== 'running' ||
    typeof turn !== 'number' ||
    !session ||
    typeof session.id !== 'string' ||
    (typeof session.file !== 'string' && session.file !== null)
  ) {
    return null;
  }
  const file = session.file === null ? null : PathExt.normalize(PathExt.join(PathExt.dirname(notebookPath), session.file));
  return { turn, id: session.id, file, bundle };
}

/** Where to ask for a running turn: its file, or else each database the server serves (`databases`). */
export function turnSources(running: IRunningTurn, databases: readonly string[]): Source[] {
  return running.file !== null ? [{ file: running.file }] : databases.map(db => ({ file: '', db }));
}

/** `headline` with the turn's state said as ended: `followup «…» · turn 2 · done`. */
export function endedHeadline(headline: string | null, turn: number): string | null {
  const mark = ` · turn ${turn} · `;
  const at = headline?.lastIndexOf(mark) ?? -1;
  return headline && at >= 0 ? `${headline.slice(0, at)}${mark}done` : headline;
}

/**
 * The output data showing `turn`'s end as the log has it (`answer`: the server's live-cell MIME bundle
 * of the turn, `timeline?turn=N&output=cell`), or null while the log still has the turn running. The
 * bundle keeps the cell's session; the server's `text/html` is what viewers without this extension
 * show (in JupyterLab the painter shows the bundle).
 */
export function endedData(was: ILiveBundle, answer: Record<string, unknown>, turn: number): Record<string, unknown> | null {
  const logged = answer[TIMELINE_MIME] as IBundle | undefined;
  const head = logged?.nodes?.[0];
  if (!logged || logged.status === 'running' || head?.type !== 'turn' || head.id !== `turn-${turn}` || head.status === 'running') {
    return null;
  }
  const bundle: ILiveBundle = { ...logged, scope: { turn }, session: was.session };
  const outcome = String(head.outcome ?? logged.summary ?? '');
  const data: Record<string, unknown> = {
    [TIMELINE_MIME]: bundle as unknown as Record<string, unknown>,
    'text/plain': typeof answer['text/plain'] === 'string' ? answer['text/plain'] : shown(`${bundle.headline ?? ''}\n${outcome}`)
  };
  if (typeof answer['text/html'] === 'string') {
    data['text/html'] = answer['text/html'];
  }
  return data;
}
