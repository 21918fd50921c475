/**
 * MCP over Streamable HTTP, as one request handler a Node HTTP server mounts
 * (`corral serve --mcp` mounts it at /mcp). Stateful: each client gets a
 * session (`Mcp-Session-Id`) with its own MCP server, so its roots stay its
 * own and `notifications/tools/list_changed` can reach it on its GET stream;
 * DELETE ends a session.
 *
 * Every call goes through the policy gate (`gate`, else one opened over the
 * Corral's store and the default policy file), shared by all sessions.
 *
 * Bounded on the clients' behalf: request bodies (4 MiB), live sessions (100),
 * and idle sessions (closed after 30 minutes with no request in flight). The
 * Host and Origin headers must name an allowed host (loopback by default), so
 * a web page cannot reach a local server through DNS rebinding.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Store } from '@corral/core';
import { createMcpServer, type CorralMcpServer, type McpCorral, type McpGate, type McpServerOptions } from '@corral/mcp';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { hostFolderSource, isInsideFolder, mcpGateOptions, resolveFolderUri } from '../mcp-folders.js';
import { openServerGate } from '../server-gate.js';

export interface McpHttpOptions extends McpServerOptions {
  /**
   * The policy gate every call goes through, shared by all sessions (pass the
   * one the HTTP API uses: `openServerGate(corral.store, …)`). Default: one
   * over the Corral's store (in memory without one) and the default policy
   * file ($CORRAL_POLICY, else ~/.config/corral/policy.yaml).
   */
  gate?: McpGate;
  /** Largest POST body read, in bytes; more is answered 413. Default 4 MiB. */
  maxBodyBytes?: number;
  /** Live sessions at most; a new client beyond them is answered 503. Default 100. */
  maxSessions?: number;
  /** A session with no request in flight for this long is closed. Default 30 minutes. */
  idleTimeoutMs?: number;
  /**
   * Host names (no port; IPv6 in brackets) the Host and Origin headers may
   * name, or false to accept any (only behind something that checks them).
   * Default: localhost, 127.0.0.1 and [::1].
   */
  allowedHosts?: string[] | false;
}

export interface McpHttpHandler {
  /** Serve one request to the MCP endpoint. `body`: the request's JSON, when the caller already read it. */
  handle(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void>;
  /** Tell every session's client the tool list changed. */
  toolsChanged(): Promise<void>;
  /** Live sessions. */
  readonly sessions: number;
  /** Stop every session's tool calls in flight; each is still answered (E_CANCELLED). */
  abortCalls(reason?: string): void;
  /** End every session and stop the idle sweep. */
  close(): Promise<void>;
}

export const MCP_HTTP_DEFAULTS = {
  maxBodyBytes: 4 * 1024 * 1024,
  maxSessions: 100,
  idleTimeoutMs: 30 * 60_000,
  allowedHosts: ['localhost', '127.0.0.1', '[::1]'],
} as const;

interface Session {
  transport: StreamableHTTPServerTransport;
  mcp: CorralMcpServer;
  lastSeen: number;
  /** Requests in flight (an open GET stream is one). */
  active: number;
}

/** JSON-RPC error codes the SDK's transport uses for the same answers. */
const SERVER_ERROR = -32000;
const SESSION_NOT_FOUND = -32001;
const PARSE_ERROR = -32700;

/** A Corral host with the store its gate keeps approvals and the audit trail in (`Corral` from @corral/node). */
export type McpHttpCorral = McpCorral & { readonly store?: Store | null | undefined };

export function createMcpHttpHandler(corral: McpHttpCorral, options: McpHttpOptions = {}): McpHttpHandler {
  const maxBodyBytes = options.maxBodyBytes ?? MCP_HTTP_DEFAULTS.maxBodyBytes;
  const maxSessions = options.maxSessions ?? MCP_HTTP_DEFAULTS.maxSessions;
  const idleTimeoutMs = options.idleTimeoutMs ?? MCP_HTTP_DEFAULTS.idleTimeoutMs;
  const allowedHosts = options.allowedHosts === false ? false : (options.allowedHosts ?? [...MCP_HTTP_DEFAULTS.allowedHosts]);
  const log = options.log ?? (() => {});
  const gate = options.gate ?? openServerGate(corral.store, { log });
  const serverOptions: McpServerOptions = {
    ...options,
    resolveFolder: options.resolveFolder ?? resolveFolderUri,
    folderSource: options.folderSource ?? hostFolderSource,
    isInside: options.isInside ?? isInsideFolder,
    ...mcpGateOptions(gate),
    // What the caller said wins over what the gate implies.
    ...(options.approvalsOutOfBand !== undefined ? { approvalsOutOfBand: options.approvalsOutOfBand } : {}),
    ...(options.approveCommand !== undefined ? { approveCommand: options.approveCommand } : {}),
  };
  const sessions = new Map<string, Session>();
  /** Initialize requests in flight: counted with the sessions, so concurrent ones cannot pass the limit together. */
  let opening = 0;
  let closing = false;

  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, session] of sessions) {
        if (session.active === 0 && now - session.lastSeen > idleTimeoutMs) {
          log(`closing idle MCP session ${id}`);
          void endSession(id, session);
        }
      }
    },
    Math.min(idleTimeoutMs, 60_000),
  );
  sweep.unref();

  async function endSession(id: string, session: Session): Promise<void> {
    sessions.delete(id);
    await session.mcp.close().catch(() => {});
  }

  async function serve(session: Session, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    session.active++;
    session.lastSeen = Date.now();
    try {
      await session.transport.handleRequest(req, res, body);
    } finally {
      session.active--;
      session.lastSeen = Date.now();
    }
  }

  async function openSession(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    if (sessions.size + opening >= maxSessions) {
      res.setHeader('retry-after', '60');
      return reply(res, 503, SERVER_ERROR, `Too many MCP sessions (${maxSessions}); end one with DELETE or try again later`);
    }
    const mcp = createMcpServer(corral, serverOptions);
    let session: Session | undefined;
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        session = { transport, mcp, lastSeen: Date.now(), active: 1 };
        sessions.set(id, session);
        mcp.server.onclose = () => {
          if (sessions.get(id) === session) sessions.delete(id);
        };
      },
      maxRequestBodySize: maxBodyBytes,
    });
    transport.onerror = (err) => log(`MCP over HTTP: ${err.message}`);
    opening++;
    try {
      await mcp.server.connect(transport);
      await transport.handleRequest(req, res, body);
    } finally {
      opening--;
      if (session) {
        session.active--;
        session.lastSeen = Date.now();
      } else {
        // Refused before a session began (a bad Accept header, say): nothing to keep.
        await mcp.close().catch(() => {});
      }
    }
  }

  return {
    get sessions() {
      return sessions.size;
    },

    async handle(req, res, body) {
      if (closing) return reply(res, 503, SERVER_ERROR, 'The MCP endpoint is shutting down');
      const refused = hostProblem(req, allowedHosts);
      if (refused) return reply(res, 403, SERVER_ERROR, refused);

      const header = req.headers['mcp-session-id'];
      if (header !== undefined) {
        const session = typeof header === 'string' ? sessions.get(header) : undefined;
        if (!session) return reply(res, 404, SESSION_NOT_FOUND, 'Session not found');
        return serve(session, req, res, body);
      }

      // No session yet: only an initialize request may start one.
      if (req.method !== 'POST') {
        return reply(
          res,
          req.method === 'GET' || req.method === 'DELETE' ? 400 : 405,
          SERVER_ERROR,
          'Bad Request: Mcp-Session-Id header is required',
        );
      }
      let message = body;
      if (message === undefined) {
        const read = await readJson(req, maxBodyBytes);
        if (read.status) return reply(res, read.status, read.status === 413 ? SERVER_ERROR : PARSE_ERROR, read.message);
        message = read.value;
      }
      if (!isInitializeRequest(message)) {
        return reply(res, 400, SERVER_ERROR, 'Bad Request: Mcp-Session-Id header is required (start a session with an initialize request)');
      }
      return openSession(req, res, message);
    },

    async toolsChanged() {
      await Promise.all([...sessions.values()].map((s) => s.mcp.toolsChanged()));
    },

    abortCalls(reason) {
      for (const session of sessions.values()) session.mcp.abortCalls(reason);
    },

    async close() {
      closing = true;
      clearInterval(sweep);
      await Promise.all([...sessions].map(([id, session]) => endSession(id, session)));
    },
  };
}

/** Why the Host or Origin header is refused, or undefined when both are allowed. */
function hostProblem(req: IncomingMessage, allowedHosts: string[] | false): string | undefined {
  if (allowedHosts === false) return undefined;
  const host = req.headers.host;
  if (!host) return 'Missing Host header';
  if (!allowedHosts.includes(hostnameOf(`http://${host}`) ?? '')) return `Host not allowed: ${host.slice(0, 100)}`;
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== 'null' && !allowedHosts.includes(hostnameOf(origin) ?? '')) {
    return `Origin not allowed: ${origin.slice(0, 100)}`;
  }
  return undefined;
}

function hostnameOf(url: string): string | undefined {
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}

type ReadResult = { status?: undefined; value: unknown } | { status: 400 | 413; message: string };

/** A request's JSON body, at most `limit` bytes of it; past that the rest is read and dropped. */
function readJson(req: IncomingMessage, limit: number): Promise<ReadResult> {
  const tooLarge = { status: 413, message: `Request body over ${limit} bytes` } as const;
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.resolve(tooLarge);
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      chunks.length = 0;
      req.off('data', onData);
      req.resume();
      resolve(tooLarge);
    };
    req.on('data', onData);
    req.once('error', () => resolve({ status: 400, message: 'The request body could not be read' }));
    req.once('end', () => {
      if (size > limit) return;
      try {
        resolve({ value: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      } catch {
        resolve({ status: 400, message: 'Parse error: Invalid JSON' });
      }
    });
  });
}

function reply(res: ServerResponse, status: number, code: number, message: string): void {
  if (res.headersSent) return void res.end();
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(status, { 'content-type': 'application/json', ...(status === 413 ? { connection: 'close' } : {}) });
  res.end(body);
}
