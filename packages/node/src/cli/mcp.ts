/**
 * `corral mcp`: Corral's tools as an MCP server over stdio. stdout carries
 * the protocol and nothing else; every diagnostic goes to stderr.
 */
import { EXIT_OK, UsageError, parse, type Cli } from './shared.js';
import { forTerminal } from '../terminal.js';

export const help = `corral mcp [--tools DIR]... [--no-bundled] [--store PATH | --no-store] [--no-watch]

Serve the tools as an MCP server over stdio (for an MCP client to start, e.g.
{ "command": "npx", "args": ["corral", "mcp"] }). Every call runs in a sandbox
worker and is recorded in the snapshot store. A tool that declares mounts sees
a folder inside the client's MCP roots: the first root, or the one named in
the call's _meta "corral/mounts"; clients without roots can run only tools
without mounts. Tools added to or removed from a --tools DIR while the server
runs are picked up, and the client is told (notifications/tools/list_changed).
Diagnostics go to stderr; stdout carries only the protocol.
  --tools DIR     also serve the tools in DIR, and watch it (repeatable)
  --no-bundled    leave out the bundled tools
  --no-watch      read the --tools folders once, at start
  --store PATH    record the calls' snapshots in this SQLite file
                  (default: $CORRAL_STORE, else $XDG_DATA_HOME/corral/snapshots.db,
                  else ~/.local/share/corral/snapshots.db)
  --no-store      record nothing`;

export async function command(args: string[], { print, io }: Cli): Promise<number> {
  const { values } = parse(
    args,
    {
      tools: { type: 'string', multiple: true },
      'no-bundled': { type: 'boolean' },
      'no-watch': { type: 'boolean' },
      store: { type: 'string' },
      'no-store': { type: 'boolean' },
    },
    false,
  );
  if (values.help) return (print(help), EXIT_OK);
  if (values.store !== undefined && values['no-store']) throw new UsageError('give --store PATH or --no-store, not both.');

  const log = (message: string) => void io.stderr.write(`corral mcp: ${forTerminal(message, { oneLine: true })}\n`);
  const [{ Corral }, { createMcpServer }, { StdioServerTransport }, { watchToolFolders }, folders] = await Promise.all([
    import('../corral.js'),
    import('@corral/mcp'),
    import('@modelcontextprotocol/sdk/server/stdio.js'),
    import('../tool-watch.js'),
    import('../mcp-folders.js'),
  ]);
  const store = values['no-store'] ? false : values.store;
  // The --tools folders are loaded by the watcher, so start-up and later changes take one path.
  const corral = await Corral.create({ bundled: !values['no-bundled'], toolDirs: [], ...(store !== undefined ? { store } : {}) });
  for (const err of corral.loadErrors) log(`skipped: ${err.message} (${err.code})`);

  const mcp = createMcpServer(corral, {
    serverInfo: { name: 'corral', version: '0.1.0' },
    resolveFolder: folders.resolveFolderUri,
    folderSource: folders.hostFolderSource,
    isInside: folders.isInsideFolder,
    log,
  });
  const dirs = values.tools ?? [];
  const watcher = watchToolFolders(corral.registry, dirs, {
    log,
    onChange: ({ added, removed }) => {
      const names = (tools: typeof added) => tools.map((t) => `${t.spec.name}@${t.spec.version}`).join(', ');
      if (added.length > 0) log(`tools added: ${names(added)}`);
      if (removed.length > 0) log(`tools removed: ${names(removed)}`);
      void mcp.toolsChanged();
    },
  });
  try {
    await watcher.reload();
  } finally {
    if (values['no-watch']) watcher.close();
  }

  const transport = new StdioServerTransport(io.stdin as NodeJS.ReadStream, io.stdout as NodeJS.WriteStream);
  await mcp.server.connect(transport);
  log(`serving ${corral.registry.list().length} tool(s) over stdio`);

  // Serve until the client closes stdin or the process is told to stop.
  await new Promise<void>((done) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      io.stdin.off('end', stop);
      io.stdin.off('close', stop);
      mcp.server.onclose = undefined;
      done();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    io.stdin.once('end', stop);
    io.stdin.once('close', stop);
    mcp.server.onclose = stop;
  });
  watcher.close();
  try {
    await mcp.close();
  } finally {
    await corral.close();
  }
  return EXIT_OK;
}
