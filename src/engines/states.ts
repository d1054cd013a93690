// The engine state machine (docs/engines.md). The API changes what is wanted (`desired`) and
// moves `state` into a transition; the engines worker finishes the transition. Pure.
//
//   create ──> provisioning ──(worker: up)──> running
//                   │ (error)                    │ stop
//                   v                            v
//                 failed ──stop──> stopping ──(worker: stop)──> stopped ──start──> provisioning
//   delete (any state) ──> stopping, desired deleted ──(worker: remove)──> gone
import type { EngineDesired, EngineState } from '../db/engine-types.js';

export type EngineRequest = 'start' | 'stop' | 'delete';

export type TransitionResult =
  | { kind: 'change'; state: EngineState; desired: EngineDesired }
  | { kind: 'unchanged' }
  | { kind: 'refused'; message: string };

export function requestTransition(state: EngineState, desired: EngineDesired, req: EngineRequest): TransitionResult {
  if (desired === 'deleted') return req === 'delete' ? { kind: 'unchanged' } : { kind: 'refused', message: 'engine is being deleted' };
  switch (req) {
    case 'delete':
      return { kind: 'change', state: 'stopping', desired: 'deleted' };
    case 'stop':
      if (state === 'stopping' || state === 'stopped') return { kind: 'unchanged' };
      return { kind: 'change', state: 'stopping', desired: 'stopped' };
    case 'start':
      if (state === 'provisioning' || state === 'running') return { kind: 'unchanged' };
      if (state === 'stopping') return { kind: 'refused', message: 'engine is stopping: start it once it has stopped' };
      return { kind: 'change', state: 'provisioning', desired: 'running' };
  }
}

/** What the worker does for an engine in `state` wanting `desired`. */
export type WorkerAction = 'up' | 'stop' | 'remove' | 'none';

export function workerAction(state: EngineState, desired: EngineDesired): WorkerAction {
  if (state === 'provisioning' && desired === 'running') return 'up';
  if (state === 'stopping') return desired === 'deleted' ? 'remove' : 'stop';
  return 'none';
}

export const TRANSITIONAL: readonly EngineState[] = ['provisioning', 'stopping'];
