// The README's adapter snippets are the type-checked files in examples/, word for word.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('README adapter snippets', () => {
  for (const file of ['langchain.ts', 'ai-sdk.ts', 'workflow.ts']) {
    it(`shows examples/${file} as it is`, () => {
      const code = readFileSync(new URL(`../../examples/${file}`, import.meta.url), 'utf8');
      expect(readme).toContain(`\`\`\`ts\n${code}\`\`\``);
    });
  }
});
