/** Shared fixtures: the smallest wasm headers and a valid spec to mutate. */
export const MODULE_BYTES = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
export const COMPONENT_BYTES = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00]);

export function goodSpec(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'diff-summary',
    version: '1.0.0',
    description: 'Summarize a unified diff',
    component: 'diff-summary.wasm',
    input_schema: {
      type: 'object',
      properties: {
        diff: { type: 'string' },
        language: { enum: ['en', 'zh'] },
        file: { type: 'string', format: 'path' },
      },
      required: ['diff'],
      additionalProperties: false,
    },
    output_schema: {
      type: 'object',
      properties: { files: { type: 'array' } },
      required: ['files'],
    },
    resources: { cpu_cores: 0.5, memory_mb: 64, disk_mb: 16, timeout_ms: 5000, network_access: ['none'] },
    mounts: [
      { guest: '/workspace', access: 'read' },
      { guest: '/out', access: 'read-write' },
    ],
    env: ['LANG'],
    ...overrides,
  };
}

/** A module whose bytes differ (a trailing custom section would do; any extra byte is enough here). */
export function moduleVariant(tag: number): Uint8Array {
  return new Uint8Array([...MODULE_BYTES, tag]);
}
