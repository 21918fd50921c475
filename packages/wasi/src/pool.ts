/**
 * The host-agnostic half of a sandbox worker pool: a bounded set of workers,
 * a bounded queue, per-task time limits and cancellation, and replacement of
 * any worker that timed out, was cancelled mid-task or crashed. Each host
 * supplies its workers through a factory: Node's are worker_threads threads
 * (@corral/node), browsers' are Web Workers (@corral/browser).
 */
import { CorralError, ErrorCodes } from '@corral/core/errors';
import { onAbort } from '@corral/core';

/** What the pool needs of a host's worker. */
export interface PoolWorker {
  /** False once the worker stopped, by itself or by `terminate`. */
  readonly alive: boolean;
  /**
   * Settles when the worker stops by itself (a crash), with the error the
   * task it was running gets. It never rejects.
   */
  readonly crashed: Promise<CorralError>;
  terminate(): Promise<void>;
}

export interface SandboxPoolOptions {
  /** Most workers alive at once (at least 1). */
  size: number;
  /** Most calls waiting for a worker; one more is refused. Default 1000. */
  maxQueue?: number;
  /**
   * Workers kept once the pool has been idle for `idleTimeoutMs`; the rest
   * are stopped (and started again on demand). Default: `size` (none stopped).
   * 0 lets a small device give all its workers' memory back between bursts.
   */
  idleWorkers?: number;
  /** How long the pool must be idle before workers over `idleWorkers` stop. Default 5000 ms. */
  idleTimeoutMs?: number;
  /**
   * Keep one booted worker in reserve, beyond `size`, while the pool has
   * workers: a worker killed by a timeout, a cancellation or a crash is
   * replaced by it at once instead of by a worker still booting. Default false.
   */
  spare?: boolean;
}

/** A worker's crash as the pool watches it: the crash once it happened, and the running task's handler. */
interface CrashWatch {
  crashed?: { error: CorralError };
  onCrash?: (error: CorralError) => void;
}

/** The longest delay a JS timer can wait. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface TaskOptions {
  /** Wall-clock limit of the task once it has a worker; on expiry the worker is killed. Infinity: none. */
  timeoutMs: number;
  /** The error the caller gets when the limit passes. */
  onTimeout: () => CorralError;
  signal?: AbortSignal;
  /**
   * Stop the worker once the task is over, whatever its outcome (e.g. it
   * loaded a transpiler the calls do not need: its memory goes with it).
   */
  retire?: boolean;
}

interface Job<W> {
  task: (worker: W) => Promise<unknown>;
  options: TaskOptions;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

/**
 * A bounded pool of sandbox workers with a bounded queue.
 * A worker that times out, is cancelled or crashes is thrown away and a fresh
 * one is started at once, so a bad call never affects calls on other workers.
 */
export class SandboxPool<W extends PoolWorker> {
  readonly size: number;
  readonly maxQueue: number;
  readonly idleWorkers: number;
  readonly #idleTimeoutMs: number;
  readonly #keepSpare: boolean;
  readonly #createWorker: () => W;
  /** The booted reserve (`spare` option): not in #all, never given a task until it replaces a worker. */
  #spare: W | undefined;
  #warmSpare: ((worker: W) => void) | undefined;
  #trimTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #idle: W[] = [];
  readonly #all = new Set<W>();
  readonly #queue: Job<W>[] = [];
  /** Stops each running task with E_CLOSED (its worker is about to be terminated under it). */
  readonly #stopOnClose = new Set<() => void>();
  /**
   * Each worker's crash, watched once per worker and handed to the task it
   * is running. Watching it per task chained a reaction to the worker's
   * never-settling `crashed` promise at every call, and each kept its call's
   * closures alive for the worker's life (~2.6 KB per call).
   */
  readonly #crashes = new WeakMap<W, CrashWatch>();
  #closed = false;
  #closing: Promise<void> | undefined;
  #running = 0;
  #replaced = 0;

  constructor(createWorker: () => W, options: SandboxPoolOptions) {
    this.size = Math.max(1, options.size);
    this.maxQueue = options.maxQueue ?? 1000;
    this.idleWorkers = Math.min(this.size, Math.max(0, options.idleWorkers ?? this.size));
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 5000;
    this.#keepSpare = options.spare ?? false;
    this.#createWorker = createWorker;
  }

  /** Workers currently alive (busy or idle), not counting the spare. */
  get workerCount(): number {
    return this.#all.size;
  }

  /** The workers alive now (busy or idle), not counting the spare. */
  get workers(): readonly W[] {
    return [...this.#all];
  }

  /** The spare held in reserve, if one is alive. */
  get spareWorker(): W | undefined {
    return this.#spare?.alive ? this.#spare : undefined;
  }

  /** True while a booted spare is held in reserve (the `spare` option). */
  get hasSpare(): boolean {
    return this.spareWorker !== undefined;
  }

  /** Calls waiting for a worker. */
  get queued(): number {
    return this.#queue.length;
  }

  /** Calls running on a worker now. */
  get running(): number {
    return this.#running;
  }

  /**
   * Workers thrown away because their call timed out, was cancelled while
   * running, or crashed them, since the pool started (each is replaced at
   * once). Read-only, for metrics.
   */
  get replacedWorkers(): number {
    return this.#replaced;
  }

  /**
   * Start idle workers ahead of the first call (up to `count` alive in all,
   * never more than `size`), so their boot overlaps whatever the caller
   * does before it. Calls start workers on demand anyway.
   */
  prestart(count = 1): void {
    while (!this.#closed && this.#all.size < Math.min(count, this.size)) {
      const worker = this.#createWorker();
      this.#all.add(worker);
      this.#idle.push(worker);
    }
    this.#scheduleTrim();
  }

  /**
   * Called with each spare worker as it starts, to load what the next call
   * is likely to need (the executor sends its most recently used tools).
   */
  onSpare(warm: (worker: W) => void): void {
    this.#warmSpare = warm;
  }

  run<T>(task: (worker: W) => Promise<T>, options: TaskOptions): Promise<T> {
    if (this.#closed) return Promise.reject(closedError(false));
    if (this.#queue.length >= this.maxQueue) {
      return Promise.reject(
        new CorralError(
          ErrorCodes.RESOURCE_EXHAUSTED,
          `The call queue is full (${this.maxQueue} calls waiting); retry later or raise maxQueue.`,
          { resource: 'queue', max_queue: this.maxQueue },
        ),
      );
    }
    return new Promise<T>((resolve, reject) => {
      const { signal } = options;
      if (signal?.aborted) return reject(abortError(signal));
      // A queued job is simply dropped; a running one is handled in #start. Removed once the job settles:
      // a signal that outlives many calls must not keep each one's job alive.
      const stopWaiting = signal
        ? onAbort(signal, () => {
            const at = this.#queue.indexOf(job);
            if (at !== -1) {
              this.#queue.splice(at, 1);
              reject(abortError(signal));
            }
          })
        : undefined;
      const job: Job<W> = {
        task,
        options,
        resolve: (value) => {
          stopWaiting?.();
          resolve(value as T);
        },
        reject: (reason) => {
          stopWaiting?.();
          reject(reason);
        },
      };
      this.#queue.push(job);
      this.#dispatch();
    });
  }

  /** Refuse queued and new calls, stop running ones and every worker. Closing again waits for the first close. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.reject(closedError(false));
    // Before the workers go: a terminated worker may never answer (a Web Worker does not), and must not read as a crash.
    for (const stop of [...this.#stopOnClose]) stop();
    clearTimeout(this.#trimTimer);
    const spare = this.#spare;
    this.#spare = undefined;
    await Promise.all([...this.#all, ...(spare ? [spare] : [])].map((w) => w.terminate()));
    this.#all.clear();
    this.#idle.length = 0;
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let worker = this.#idle.pop();
      // An idle worker can die without a task (a spare that failed to boot): drop it.
      while (worker && !worker.alive) {
        this.#all.delete(worker);
        worker = this.#idle.pop();
      }
      if (!worker && this.#all.size < this.size) {
        worker = this.#createWorker();
        this.#all.add(worker);
      }
      if (!worker) return;
      void this.#start(worker, this.#queue.shift()!);
    }
    this.#scheduleTrim();
  }

  /** Boot the reserve worker if the pool keeps one and has workers to replace. */
  #ensureSpare(): void {
    if (!this.#keepSpare || this.#closed || this.#all.size === 0 || this.#spare?.alive) return;
    this.#spare = this.#createWorker();
    this.#warmSpare?.(this.#spare);
  }

  /** A worker for the one just thrown away: the booted spare if there is one, else a new one booting now. */
  #replacement(): W {
    const spare = this.#spare;
    this.#spare = undefined;
    return spare?.alive ? spare : this.#createWorker();
  }

  /** After `idleTimeoutMs` without calls, stop the idle workers over `idleWorkers` (and the spare if none is left). */
  #scheduleTrim(): void {
    if (this.idleWorkers >= this.size || this.#closed) return;
    clearTimeout(this.#trimTimer);
    if (this.#queue.length > 0 || this.#running > 0 || this.#all.size <= this.idleWorkers) return;
    this.#trimTimer = setTimeout(() => {
      if (this.#closed || this.#queue.length > 0 || this.#running > 0) return;
      while (this.#all.size > this.idleWorkers && this.#idle.length > 0) {
        const worker = this.#idle.shift()!;
        this.#all.delete(worker);
        void worker.terminate();
      }
      if (this.#all.size === 0 && this.#spare) {
        void this.#spare.terminate();
        this.#spare = undefined;
      }
    }, this.#idleTimeoutMs);
    // An idle pool must not keep a Node process alive (browsers have no unref).
    (this.#trimTimer as { unref?: () => void }).unref?.();
  }

  #watchCrash(worker: W): CrashWatch {
    let crash = this.#crashes.get(worker);
    if (!crash) {
      const watched: CrashWatch = {};
      const settle = (error: CorralError) => {
        watched.crashed = { error };
        watched.onCrash?.(error);
      };
      // `crashed` never rejects by contract; a host's that did still fails the call, not the process.
      worker.crashed.then(settle, (reason: unknown) =>
        settle(
          CorralError.is(reason)
            ? reason
            : new CorralError(ErrorCodes.UNEXPECTED_EXIT, `The sandbox worker stopped unexpectedly (${String(reason)}).`, {
                reason: 'worker_crashed',
              }),
        ),
      );
      this.#crashes.set(worker, watched);
      crash = watched;
    }
    return crash;
  }

  async #start(worker: W, job: Job<W>): Promise<void> {
    const { timeoutMs, onTimeout, signal } = job.options;
    // A timeout, a cancellation or a crash leaves the worker in an unknown state: it is replaced.
    let faulted = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopWaiting: (() => void) | undefined;
    let onClose: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      onClose = () => {
        faulted = true;
        reject(closedError(true));
      };
      this.#stopOnClose.add(onClose);
      // Timers take at most 2^31-1 ms; anything longer (or Infinity) would fire at once.
      if (timeoutMs <= MAX_TIMER_MS) {
        timer = setTimeout(() => {
          faulted = true;
          reject(onTimeout());
        }, timeoutMs);
      }
      if (signal)
        stopWaiting = onAbort(signal, () => {
          faulted = true;
          reject(abortError(signal));
        });
    });
    const crash = this.#watchCrash(worker);
    const crashed = new Promise<never>((_, reject) => {
      crash.onCrash = (error) => {
        faulted = true;
        reject(error);
      };
      if (crash.crashed) crash.onCrash(crash.crashed.error);
    });
    // Whichever loses the race must not surface later as an unhandled rejection.
    stopped.catch(() => {});
    crashed.catch(() => {});
    this.#running++;
    try {
      job.resolve(await Promise.race([job.task(worker), stopped, crashed]));
    } catch (err) {
      job.reject(err);
    } finally {
      this.#running--;
      clearTimeout(timer);
      stopWaiting?.();
      this.#stopOnClose.delete(onClose!);
      crash.onCrash = undefined;
    }
    if (!faulted && !job.options.retire && worker.alive && !this.#closed) {
      this.#idle.push(worker);
    } else {
      const retired = job.options.retire === true && !faulted && worker.alive;
      if (!this.#closed && !retired) this.#replaced++;
      this.#all.delete(worker);
      if (worker.alive) void worker.terminate();
      // Replace it now (the spare, else a worker booting now), so its boot overlaps whatever the caller does next.
      if (!this.#closed) {
        const next = this.#replacement();
        this.#all.add(next);
        this.#idle.push(next);
      }
    }
    // Booted only after a call went well: not beside the first call's own boot, nor
    // beside the call that follows a kill (on a small machine both compete for the CPU).
    if (!faulted) this.#ensureSpare();
    this.#dispatch();
  }
}

/**
 * `work`, or E_CANCELLED as soon as `signal` aborts: for what a call waits
 * on before the pool runs it (a component's first transpile, which other
 * calls may share and so goes on).
 */
export function unlessCancelled<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  // Already cancelled: so even when `work` has settled (the call then goes no further).
  if (signal.aborted) return Promise.reject(abortError(signal));
  let stopWaiting = () => {};
  const cancelled = new Promise<never>((_, reject) => {
    stopWaiting = onAbort(signal, () => reject(abortError(signal)));
  });
  return Promise.race([work, cancelled]).finally(stopWaiting);
}

/** A cancelled call: the caller's own decision, so it carries the caller's reason. */
function abortError(signal: AbortSignal): CorralError {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : reason === undefined ? '' : String(reason);
  return new CorralError(ErrorCodes.CANCELLED, `The call was cancelled${why ? `: ${why}` : ''}.`, {
    cancelled: true,
    ...(why ? { reason: why } : {}),
  });
}

/** E_CLOSED: the pool, or what waits to use it, was closed. */
export function closedError(running: boolean): CorralError {
  return new CorralError(
    ErrorCodes.CLOSED,
    running
      ? 'Corral was closed while the call ran: its sandbox worker was stopped. Create a new instance.'
      : 'Corral was closed: its sandbox workers are stopped, so the call cannot run. Create a new instance.',
    { running },
  );
}
