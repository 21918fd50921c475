// Red team: a workflow input whose name is also a member of Object.prototype (toString, constructor,
// valueOf …) must not take that inherited function as its value when the caller leaves it out.
import { CorralError, ErrorCodes } from '@corral/core';
import { loadWorkflow, resolveInputs } from '@corral/workflow';
import { describe, expect, it } from 'vitest';

describe('inputs named like Object.prototype members', () => {
  const wf = loadWorkflow(`name: proto
inputs:
  toString: { description: "required, no type" }
  valueOf: { default: 1 }
steps:
  - id: a
    tool: echo
    input: { x: "{{ inputs.toString }}" }
`);

  it('a required one left out is missing, not Object.prototype.toString', () => {
    let err: unknown;
    try {
      resolveInputs(wf, {});
    } catch (e) {
      err = e;
    }
    expect(CorralError.is(err, ErrorCodes.INPUT_VALIDATION)).toBe(true);
    expect((err as Error).message).toContain('/toString: is required');
  });

  it('one with a default takes the default, and a given one its value', () => {
    expect(resolveInputs(wf, { toString: 'x' })).toEqual({ toString: 'x', valueOf: 1 });
  });
});
