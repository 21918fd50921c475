/** The languages `corral init` and `corral build` know, each loaded only when used. */
import type { Language, LanguageName } from './language.js';

export const LANGUAGE_NAMES: readonly LanguageName[] = ['c', 'rust', 'js'];

export async function language(name: LanguageName): Promise<Language> {
  switch (name) {
    case 'c':
      return (await import('./c.js')).c;
    case 'rust':
      return (await import('./rust.js')).rust;
    case 'js':
      return (await import('./js.js')).js;
  }
}

export function isLanguageName(name: string): name is LanguageName {
  return (LANGUAGE_NAMES as readonly string[]).includes(name);
}

/** The language whose sources DIR holds; undefined when none (or several) match. */
export async function detectLanguage(dir: string): Promise<{ found?: Language; matches: LanguageName[] }> {
  const matches: Language[] = [];
  for (const name of LANGUAGE_NAMES) {
    const lang = await language(name);
    if (await lang.detect(dir)) matches.push(lang);
  }
  return { ...(matches.length === 1 ? { found: matches[0] } : {}), matches: matches.map((l) => l.name) };
}
