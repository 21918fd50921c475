/**
 * @corral/node/http — the HTTP API server (`corral serve`): POST /execute and
 * the rest of the routes, its OpenAPI document, and the status codes it
 * answers with. A subpath, so `@corral/node` alone does not load Node's HTTP
 * server, the workflow engine or the policy gate.
 */
export {
  CorralHttpServer,
  startHttpServer,
  checkHttpServerOptions,
  isLoopbackAddress,
  DEFAULT_HTTP_PORT,
  DEFAULT_HTTP_HOST,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_HTTP_CONCURRENCY,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  DEFAULT_APPROVAL_WAIT_MS,
  type HttpServerOptions,
  type HttpMount,
  type HttpLogEntry,
} from './server/http.js';
export { buildOpenApi, type OpenApiOptions } from './server/openapi.js';
export { statusForResult, HttpErrorCodes, type HttpErrorCode } from './server/status.js';
