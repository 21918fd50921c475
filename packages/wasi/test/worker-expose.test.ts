/**
 * exposeSandboxWorker: the worker API over comlink, with the work a call
 * leaves for after its reply (an instance made ahead for the next call)
 * done as soon as that reply is posted, not on a timer the next call can
 * overtake.
 */
import { readFileSync } from 'node:fs';
import { MessageChannel } from 'node:worker_threads';
import { wrap, type Endpoint } from 'comlink';
import nodeEndpoint from 'comlink/dist/umd/node-adapter.js';
import { describe, expect, it } from 'vitest';
import { transpileComponent, type RunRequest } from '@corral/wasi';
import { exposeSandboxWorker, runAfterPosting, type SandboxWorkerApi } from '@corral/wasi/worker';

const asEndpoint = nodeEndpoint as unknown as (port: unknown) => Endpoint;

describe('runAfterPosting', () => {
  it('runs queued work right after the next message is posted, in order, and only once', () => {
    const events: string[] = [];
    const inner: Endpoint = {
      postMessage: (message) => events.push(`post ${String(message)}`),
      addEventListener: () => {},
      removeEventListener: () => {},
    };
    const { endpoint, afterReply } = runAfterPosting(inner);
    afterReply(() => events.push('first'));
    afterReply(() => {
      events.push('second');
      throw new Error('work ahead that fails');
    });
    afterReply(() => events.push('third'));
    expect(events).toEqual([]);
    endpoint.postMessage('reply');
    endpoint.postMessage('another');
    expect(events).toEqual(['post reply', 'first', 'second', 'third', 'post another']);
  });
});

describe('exposeSandboxWorker', () => {
  it('answers back-to-back calls of a component, each with its own environment', async () => {
    const { port1, port2 } = new MessageChannel();
    exposeSandboxWorker({}, asEndpoint(port1));
    const api = wrap<SandboxWorkerApi>(asEndpoint(port2));
    try {
      const wasm = readFileSync(new URL('../../../test/fixtures/tools/env-dump/env-dump.wasm', import.meta.url));
      const prepared = await transpileComponent(wasm, 'env-dump');
      const request = (who: string): RunRequest => ({
        toolName: 'env-dump',
        stdin: new TextEncoder().encode('{}'),
        args: ['env-dump'],
        env: { WHO: who },
        mounts: [],
        outputLimitBytes: 1 << 20,
        memoryLimitBytes: 64 << 20,
        diskLimitBytes: 0,
      });
      const seen: unknown[] = [];
      for (let i = 0; i < 5; i++) {
        const outcome = await api.run({
          kind: 'component',
          key: 'env-dump',
          ...(i === 0 ? { prepared } : {}),
          request: request(`call ${i}`),
        });
        if (!outcome.ok) throw new Error(outcome.error.message);
        seen.push((JSON.parse(new TextDecoder().decode(outcome.value.stdout)) as { WHO?: string }).WHO);
      }
      expect(seen).toEqual(['call 0', 'call 1', 'call 2', 'call 3', 'call 4']);
    } finally {
      port1.close();
      port2.close();
    }
  }, 60_000);
});
