/**
 * What a new tool looks like in every language: the same example tool (a
 * word counter), so the kits can be compared, and the same README.
 */

/** The new tool's tool-spec.json. */
export function toolSpec(name: string, resources: { memory_mb: number; timeout_ms: number }): string {
  const spec = {
    name,
    version: '0.1.0',
    description: 'Counts the words of a text and finds the longest one.',
    component: `${name}.wasm`,
    input_schema: {
      type: 'object',
      properties: { text: { type: 'string', description: 'The text to read.' } },
      required: ['text'],
      additionalProperties: false,
    },
    output_schema: {
      type: 'object',
      properties: { words: { type: 'integer' }, longest: { type: 'string' } },
      required: ['words', 'longest'],
    },
    resources: { ...resources, network_access: ['none'] },
  };
  return `${JSON.stringify(spec, null, 2)}\n`;
}

/** One example call and its answer (the first of the longest words wins). */
export const EXAMPLES = {
  'examples/hello.input.json': '{ "text": "the quick brown fox jumps" }\n',
  'examples/hello.expected.json': '{ "words": 5, "longest": "quick" }\n',
};

/** A new tool's README, the same for every language but the names. */
export function readme(name: string, lang: string, source: string, fn: string, error: string): string {
  return `# ${name}

A Corral tool written in ${lang}. It reads one JSON object on stdin and writes
one on stdout; \`tool-spec.json\` is its contract (input and output schemas,
resources).

    corral build ${name}     # compile ${source} into ${name}.wasm
    corral test ${name}      # run examples/*.input.json, compare with *.expected.json
    corral run ${name} --tools ${name} --input '{"text": "hello world"}'

Change \`${fn}\` in ${source}, the schemas in tool-spec.json and the examples
together. Return ${error} to fail: the tool prints
\`{"error":{"message":...}}\` and exits 1, which Corral reports as
E_UNEXPECTED_EXIT with the message. \`corral test --update\` rewrites the
expected files from what the tool prints now.
`;
}
