/**
 * Placeholder so the commands build before the C kit lands: the C kit's own
 * c.ts (written alongside corral.h/corral.c) replaces this file.
 */
import { MissingToolchain, type Language } from './language.js';

export const c: Language = {
  name: 'c',
  scaffold: () => ({}),
  detect: async () => false,
  build: async () => {
    throw new MissingToolchain('the C language lands with the C kit');
  },
};
