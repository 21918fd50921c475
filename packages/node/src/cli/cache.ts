/** `corral cache clear`: drop the transpiled components Corral keeps. */
import { EXIT_OK, UsageError, parse, type Cli } from './shared.js';

export const help = `corral cache clear

Delete the transpiled components Corral keeps in its cache folder.`;

export async function command(args: string[], { print }: Cli): Promise<number> {
  const { values, positionals } = parse(args, {}, true);
  if (values.help) return (print(help), EXIT_OK);
  if (positionals[0] !== 'clear' || positionals.length !== 1) throw new UsageError("the cache command takes 'clear'.");
  const { ComponentCache } = await import('../cache.js');
  const cache = new ComponentCache();
  print(`Removed ${await cache.clear()} cached component(s) from ${cache.dir}.`);
  return EXIT_OK;
}
