// The routing rules, one by one: where a call goes and the reason its
// snapshot will carry. (The fleet end to end: test/fleet/routing.test.ts.)
import { describe, expect, it } from 'vitest';
import { decideRoute, type RouteFacts } from '@corral/fleet';

const idle = { queued: 0, running: 0, workerCount: 2 };
const busy = { queued: 0, running: 2, workerCount: 2 };
const facts = (over: Partial<RouteFacts> = {}): RouteFacts => ({
  tool: 'diff-summary',
  inputBytes: 1000,
  hostMounts: false,
  local: idle,
  fleetReachable: true,
  fleetQueue: 0,
  ...over,
});

describe('decideRoute', () => {
  it('keeps a small call local while a local worker is free', () => {
    expect(decideRoute(facts())).toEqual({ where: 'local', reason: 'a local worker is free' });
  });

  it('sends a large input to the fleet, from the size the policy sets', () => {
    expect(decideRoute(facts({ inputBytes: 3 * 1024 * 1024 }))).toEqual({ where: 'fleet', reason: 'the input is 3.0 MiB' });
    expect(decideRoute(facts({ inputBytes: 300 * 1024 }), { fleetFromBytes: 256 * 1024 })).toEqual({
      where: 'fleet',
      reason: 'the input is 300 KiB',
    });
    expect(decideRoute(facts({ inputBytes: 300 * 1024 })).where).toBe('local');
  });

  it('goes out when more calls wait locally than the cost weight allows per worker', () => {
    expect(decideRoute(facts({ local: { ...busy, queued: 2 } }))).toEqual({ where: 'local', reason: '2 calls wait for a local worker' });
    expect(decideRoute(facts({ local: { ...busy, queued: 3 } }))).toEqual({ where: 'fleet', reason: '3 calls wait for a local worker' });
    // A dear fleet (cost weight 4): 8 per worker may wait before a call goes out.
    expect(decideRoute(facts({ local: { ...busy, queued: 8 } }), { costWeight: 4 }).where).toBe('local');
    expect(decideRoute(facts({ local: { ...busy, queued: 9 } }), { costWeight: 4 }).where).toBe('fleet');
  });

  it('stays local while the fleet is unreachable or its own queue is long, whatever else says go', () => {
    const big = { inputBytes: 10 * 1024 * 1024 };
    expect(decideRoute(facts({ ...big, fleetReachable: false }))).toEqual({ where: 'local', reason: 'the fleet is unreachable' });
    expect(decideRoute(facts({ ...big, fleetReachable: false }), { tools: { 'diff-summary': 'fleet' } }).where).toBe('local');
    expect(decideRoute(facts({ ...big, fleetQueue: 1000 }))).toEqual({ where: 'local', reason: 'the fleet has 1000 calls waiting' });
    expect(decideRoute(facts({ ...big, fleetQueue: 20 }), { fleetQueueLimit: 10 }).where).toBe('local');
    expect(decideRoute(facts({ ...big, fleetQueue: undefined })).where).toBe('fleet');
  });

  it('follows a per-tool rule, and never sends a call that mounts a host folder', () => {
    expect(decideRoute(facts(), { tools: { 'diff-summary': 'fleet' } })).toEqual({
      where: 'fleet',
      reason: 'the policy sends diff-summary to the fleet',
    });
    expect(decideRoute(facts({ inputBytes: 50e6 }), { tools: { 'diff-summary': 'local' } }).where).toBe('local');
    expect(decideRoute(facts({ hostMounts: true }), { tools: { 'diff-summary': 'fleet' } })).toEqual({
      where: 'local',
      reason: 'it mounts a folder of this machine',
    });
  });
});
