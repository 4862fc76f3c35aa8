/**
 * After a kernel restart: which outputs show a running turn, and the data that replaces one once the
 * log has closed the turn (the browser test, tests/browser/test_restart_browser.py, drives the rest).
 * The painter's `shown` makes bidirectional controls visible.
 */

import type { ITurnNode } from '../widgets/painter.js';
import type { IBundle } from '../paint';
import { endedData, endedHeadline, runningTurn, TIMELINE_MIME, turnSources } from '../restartdata';

const session = { id: 'abc', file: '../data/nb.nbagent.sqlite' };

function live(status: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    version: 1,
    seq: 5,
    scope: { turn: 2 },
    headline: 'followup «go» · turn 2 · running · tool: 3/10',
    status,
    status_text: status,
    summary: status,
    nodes: [],
    pending: { next_step: [], next_turn: [] },
    session,
    ...extra
  };
}

function logged(status: string, outcome: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { [TIMELINE_MIME]: loggedBundle(status, outcome), ...extra };
}

function loggedBundle(status: string, outcome: string): IBundle {
  const running = status === 'running';
  const head: ITurnNode = {
    id: 'turn-2',
    type: 'turn',
    parent: null,
    seq: 1,
    turn: 2,
    status,
    status_text: status,
    title: 'go',
    outcome,
    why: running ? null : outcome,
    steps: 1,
    steps_text: '1 step',
    start: 1000,
    end: running ? null : 2000,
    duration_text: running ? '' : '1.0 s'
  };
  return {
    version: 1,
    seq: 9,
    scope: { turn: 2 },
    headline: 'followup «go» · turn 2 · done',
    status: status === 'running' ? 'running' : 'idle',
    status_text: status,
    summary: outcome || 'running',
    nodes: [head],
    pending: { next_step: [], next_turn: [] },
    omitted_turns: 0,
    usage: null
  };
}

describe('runningTurn', () => {
  it('finds a running live bundle and resolves its file against the notebook folder', () => {
    const found = runningTurn({ [TIMELINE_MIME]: live('running') }, 'work/nb/a.ipynb');
    expect(found && { turn: found.turn, id: found.id, file: found.file }).toEqual({
      turn: 2,
      id: 'abc',
      file: 'work/data/nb.nbagent.sqlite'
    });
  });

  it('finds a running turn of a session in a database (file null), to be asked of the databases', () => {
    const found = runningTurn({ [TIMELINE_MIME]: live('running', { session: { id: 'abc', file: null } }) }, 'a.ipynb');
    expect(found && { turn: found.turn, id: found.id, file: found.file }).toEqual({ turn: 2, id: 'abc', file: null });
    expect(turnSources(found!, ['team', 'NBAGENT_DB'])).toEqual([
      { file: '', db: 'team' },
      { file: '', db: 'NBAGENT_DB' }
    ]);
    expect(turnSources(found!, [])).toEqual([]);
    const inFile = runningTurn({ [TIMELINE_MIME]: live('running') }, 'work/nb/a.ipynb')!;
    expect(turnSources(inFile, ['team'])).toEqual([{ file: 'work/data/nb.nbagent.sqlite' }]);
  });

  it('passes over ended turns, bundles without a session or a usable file, and other outputs', () => {
    expect(runningTurn({ [TIMELINE_MIME]: live('idle') }, 'a.ipynb')).toBeNull();
    expect(runningTurn({ [TIMELINE_MIME]: live('running', { session: null }) }, 'a.ipynb')).toBeNull();
    expect(runningTurn({ [TIMELINE_MIME]: live('running', { session: { id: 'abc' } }) }, 'a.ipynb')).toBeNull();
    expect(runningTurn({ [TIMELINE_MIME]: live('running', { session: { id: 'abc', file: 3 } }) }, 'a.ipynb')).toBeNull();
    expect(runningTurn({ [TIMELINE_MIME]: live('running', { scope: null }) }, 'a.ipynb')).toBeNull();
    expect(runningTurn({ 'text/plain': 'x' }, 'a.ipynb')).toBeNull();
  });
});

describe('endedData', () => {
  const was = live('running') as any;

  it('is null while the log has the turn running', () => {
    expect(endedData(was, logged('running', ''), 2)).toBeNull();
  });

  it('is null for an answer about another turn', () => {
    expect(endedData(was, logged('aborted', 'canceled (closed)'), 3)).toBeNull();
  });

  it("shows the server's view of the log's end, keeping the cell's session", () => {
    const answer = logged('aborted', 'canceled (closed)', { 'text/html': '<div>end</div>', 'text/plain': 'the end' });
    const data = endedData(was, answer, 2)!;
    const bundle = data[TIMELINE_MIME] as any;
    expect(bundle.status).toBe('idle');
    expect(bundle.session).toEqual(session);
    expect(bundle.headline).toBe('followup «go» · turn 2 · done');
    expect(data['text/html']).toBe('<div>end</div>');
    expect(data['text/plain']).toBe('the end');
  });

  it('makes its own text, bidirectional controls shown as visible marks, when the server sent none', () => {
    const data = endedData(was, logged('aborted', 'canceled \u202e(closed)'), 2)!;
    expect(String(data['text/plain'])).toMatch(/^followup «go» · turn 2 · done\ncanceled /);
    expect(String(data['text/plain'])).not.toContain('\u202e');
    expect(Object.keys(data).sort()).toEqual([TIMELINE_MIME, 'text/plain']);
  });

  it('is null for an answer without a bundle', () => {
    expect(endedData(was, {}, 2)).toBeNull();
  });
});

describe('endedHeadline', () => {
  it('says the turn is done, dropping a progress line', () => {
    expect(endedHeadline('followup «go» · turn 2 · running · tool: 3/10', 2)).toBe('followup «go» · turn 2 · done');
  });

  it('keeps a headline it does not recognise', () => {
    expect(endedHeadline('something else', 2)).toBe('something else');
    expect(endedHeadline(null, 2)).toBeNull();
  });
});
