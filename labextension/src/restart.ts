/**
 * After a kernel restart (or death), the live turn outputs of the old kernel show how their turns
 * really ended.
 *
 * A live cell (`%followup`, `%steer`) is a display the kernel updates until its turn ends; a kernel
 * that goes away mid-turn never sends that last update, so the cell (and the notebook as saved)
 * would say "running" forever while the log says the turn ended (`canceled (closed)`: the old kernel
 * closes its agent as it exits). Each live bundle names its session (`session: {id, file}`, the file
 * relative to the notebook's folder; docs/timeline-json.md). So when the notebook's kernel restarts or
 * dies, and when the notebook opens, every output whose bundle is still `running` is looked up in the
 * log through the server (`timeline?turn=N&output=cell`); once the log has closed the turn, the output's data
 * becomes what the server makes of that turn (the bundle, its HTML and text, as the kernel would
 * have shown them), in the output model, so the screen and the saved file say the end. An
 * approval prompt of such a turn is replaced too (its output carries the turn's bundle). A turn the
 * log has not closed yet is looked at again after each of RETRY_MS, then left as it is.
 *
 * Text from the log reaches the page only through the timeline renderer (the painter), which ranks
 * above the replacement's `text/html` (made by the server's one escaping function, for viewers
 * without this extension).
 */

import { NotebookPanel } from '@jupyterlab/notebook';
import { IOutputModel } from '@jupyterlab/rendermime';

import { fetchTurnOutput, listDatabases, Source } from './api';
import { endedData, endedHeadline, IRunningTurn, RETRY_MS, runningTurn, turnSources } from './restartdata';

const pause = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms));

/** An output model and the list it sits in (the model's place may change while we wait). */
interface ITarget {
  outputs: { length: number; get(i: number): IOutputModel; set(i: number, value: any): void };
  model: IOutputModel;
  running: IRunningTurn;
}

/** Every output of `panel`'s notebook that shows a running turn, now. */
function runningOutputs(panel: NotebookPanel): ITarget[] {
  const targets: ITarget[] = [];
  const model = panel.context.model;
  if (!model) {
    return targets;
  }
  for (const cell of model.cells) {
    const outputs = (cell as any).outputs as ITarget['outputs'] | undefined;
    for (let i = 0; outputs && i < outputs.length; i++) {
      const output = outputs.get(i);
      if (!output.trusted) {
        continue; // an untrusted notebook's saved outputs send no request anywhere
      }
      const running = runningTurn(output.data as Record<string, unknown>, panel.context.path);
      if (running) {
        targets.push({ outputs, model: output, running });
      }
    }
  }
  return targets;
}

/** Replace `target`'s output (if still there) by `data`; returns whether it did. */
function replace(target: ITarget, data: Record<string, unknown>): boolean {
  for (let i = 0; i < target.outputs.length; i++) {
    if (target.outputs.get(i) === target.model) {
      const json = target.model.toJSON() as Record<string, unknown>;
      target.outputs.set(i, { ...json, data, metadata: {} });
      return true;
    }
  }
  return false;
}

/** The first of `sources` that answers for turn `turn` of session `id` (in the order given). */
async function firstAnswer(
  sources: Source[],
  id: string,
  turn: number,
  headline: string | null
): Promise<{ source: Source; answer: Record<string, unknown> } | null> {
  const answers = await Promise.all(
    sources.map(source =>
      fetchTurnOutput(source, id, turn, headline).then(
        answer => ({ source, answer }),
        () => null // not there (another database), gone or refused
      )
    )
  );
  return answers.find(a => a !== null) ?? null;
}

/** Look up each target's turn in the log until it has ended (at most RETRY_MS.length more looks). */
export async function settle(targets: ITarget[]): Promise<void> {
  const turns = new Map<string, ITarget[]>();
  for (const target of targets) {
    const { file, id, turn } = target.running;
    const key = JSON.stringify([file, id, turn]);
    turns.set(key, [...(turns.get(key) ?? []), target]);
  }
  // A session in a database is looked for in each one the server serves, by name (asked once);
  // the one that answers is asked again.
  let served: Promise<string[]> | null = null;
  const databases = (): Promise<string[]> => (served ??= listDatabases().catch(() => []));
  await Promise.all(
    Array.from(turns.values(), async group => {
      const { file, id, turn, bundle } = group[0].running;
      let sources = turnSources(group[0].running, file === null ? await databases() : []);
      const headline = endedHeadline(bundle.headline, turn);
      for (let look = 0; look <= RETRY_MS.length; look++) {
        if (look > 0) {
          await pause(RETRY_MS[look - 1]);
        }
        const found = await firstAnswer(sources, id, turn, headline);
        if (!found) {
          return; // the file is gone or refused, or no database holds the session: left as it is
        }
        sources = [found.source];
        const answer = found.answer;
        const data = endedData(bundle, answer, turn);
        if (data) {
          group.forEach(target => replace(target, data));
          return;
        }
      }
    })
  );
}

/**
 * Show the true end of the old kernel's turns in `panel` when its kernel restarts or dies, and of the
 * saved running outputs once the notebook is open. Returns the sweep (for tests).
 */
export function watchRestarts(panel: NotebookPanel): () => Promise<void> {
  const sweep = (): Promise<void> => settle(runningOutputs(panel));
  const context = panel.sessionContext;
  context.statusChanged.connect((_, status) => {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      void sweep();
    }
  });
  context.kernelChanged.connect((_, change) => {
    if (change.oldValue) {
      void sweep();
    }
  });
  void panel.context.ready.then(sweep);
  return sweep;
}
