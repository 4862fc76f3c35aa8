/**
 * Types of the "What if…" editor and the attribution bars (whatif_editor.js beside this file), for
 * the JupyterLab extension, which imports the same module the timeline widget runs.
 */

/** One arrival of a finished turn (nbagent/forks/editor_plan.py). */
export interface IArrival {
  id: string;
  action: string;
  seen_by: number;
  label: string;
  source: string;
  badge: string;
  preview: string;
  pending: boolean;
  movable: boolean;
}

/** The editor's view model of a finished turn. */
export interface IEditorPlan {
  turn: number;
  steps: { step: number; label: string }[];
  arrivals: IArrival[];
}

/** The edits in the page's terms ("seen by step N", 1-based). */
export interface IWhatIfEdits {
  turn: number;
  drop: string[];
  move: Record<string, number>;
  add: { text: string; seen_by: number }[];
}

export interface IEditorHost {
  /** Runs the replay (absent: no kernel; the editor offers the lines to copy). */
  replay?: (edits: IWhatIfEdits, area: HTMLElement) => Promise<void> | void;
  close?: () => void;
}

export interface IEditor {
  root: HTMLElement;
  replayArea: HTMLElement;
  say(words: string, status?: string): void;
}

export function whatIfEdits(state: any): IWhatIfEdits;
export function whatIfLines(edits: IWhatIfEdits): string;
export function whatIfEditor(plan: IEditorPlan, host: IEditorHost): IEditor;
export function attributionBars(result: any): HTMLElement;
