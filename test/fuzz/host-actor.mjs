/**
 * The careless host of the filesystem fuzz (fs-fuzz.ts), run in its own
 * thread while the guest's sequences run: it renames folders inside the
 * mount and back, swaps a folder for a symlink out of the mount and back
 * (rename it away, symlink its name to outside/, then restore), as a
 * `git checkout` or an agent working beside a tool would; and it opens
 * files of its own outside the mount and holds them a moment, as a host
 * process with its own files (a snapshot store, a cache) does, so a file
 * descriptor number the guest lost can be reused by one of the host's.
 *
 * It must never touch anything outside the mount itself: every folder is
 * walked from the mount root one name at a time with O_NOFOLLOW (never
 * following a symlink the guest may have made), and every change is made
 * through the held parent's /proc/self/fd entry. The outside files it opens
 * are only opened, never written.
 *
 * Control, through a SharedArrayBuffer of Int32 (see fs-fuzz.ts):
 *   [0] state: 0 run, 1 pause (finish the cycle, acknowledge, wait), 2 stop
 *   [1] paused acknowledgement (the main thread clears it to resume)
 *   [2] operations done  [3] swap cycles  [4] symlinks made  [5] failed ops
 *   [6] outside files held  [7] set when the actor died (its error is on stderr)
 */
import { workerData } from 'node:worker_threads';
import { closeSync, constants, lstatSync, openSync, renameSync, symlinkSync, unlinkSync, writeSync } from 'node:fs';

const { control, mount, targets, holdFiles, pace } = workerData;

/**
 * A calm host leaves folders where they belong most of the time, as in a real
 * workspace, so guest operations find them; a frantic one never rests, which
 * widens the races between a check and a use. 'mixed' alternates the two
 * every 30 ms.
 */
function frantic() {
  if (pace === 'mixed') return Math.floor(performance.now() / 30) % 2 === 1;
  return pace === 'frantic';
}
const ctrl = new Int32Array(control);
const O_PATH = 0o10000000;
const DIR = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;

// Control word 0: 0 runs, PAUSE holds, STOP ends.
const PAUSE = 1;
const STOP = 2;

const rootFd = openSync(mount, DIR);

/** A tiny xorshift, so the actor's rhythm varies without Math.random's allocation. */
let seed = (Date.now() ^ (process.pid << 8)) >>> 0 || 1;
function rand(n) {
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed % n;
}

function spin(us) {
  const end = performance.now() + us / 1000;
  while (performance.now() < end);
}

function op(fn) {
  Atomics.add(ctrl, 2, 1);
  try {
    fn();
    return true;
  } catch {
    Atomics.add(ctrl, 5, 1);
    return false;
  }
}

/** The folder `segments` below the mount root, held as an O_PATH fd, or null (gone, or not a real folder now). */
function walk(segments) {
  let fd = rootFd;
  for (const name of segments) {
    let next;
    try {
      next = openSync(`/proc/self/fd/${fd}/${name}`, DIR);
    } catch {
      next = -1;
    }
    if (fd !== rootFd) closeSync(fd);
    if (next < 0) return null;
    fd = next;
  }
  return fd;
}

/** One rename-away / swap-for-a-symlink / restore cycle on one target folder. */
function cycle(target) {
  const parent = walk(target.parent);
  if (parent === null) return;
  const at = `/proc/self/fd/${parent}/`;
  const away = `.host-away-${target.name}`;
  try {
    if (!op(() => renameSync(at + target.name, at + away))) return;
    // 0: renamed away only; 1: an absolute symlink out; 2: a relative one out.
    const kind = rand(3);
    let linked = false;
    if (kind > 0) {
      linked = op(() => symlinkSync(kind === 1 ? target.absolute : target.relative, at + target.name));
      if (linked) Atomics.add(ctrl, 4, 1);
    }
    if (!frantic()) spin(rand(400));
    if (linked) {
      op(() => {
        if (lstatSync(at + target.name).isSymbolicLink()) unlinkSync(at + target.name);
      });
    }
    op(() => renameSync(at + away, at + target.name));
    Atomics.add(ctrl, 3, 1);
  } finally {
    if (parent !== rootFd) closeSync(parent);
  }
}

/** Open one of the host's own files outside the mount, hold it a moment, close it. */
function hold() {
  const file = holdFiles[rand(holdFiles.length)];
  let fd = -1;
  if (op(() => (fd = openSync(file, constants.O_RDWR)))) {
    Atomics.add(ctrl, 6, 1);
    spin(rand(600));
    closeSync(fd);
  }
}

function main() {
  while (true) {
    const state = Atomics.load(ctrl, 0);
    if (state === STOP) break;
    if (state === PAUSE) {
      // Every cycle restores what it moved before the state is read again.
      Atomics.store(ctrl, 1, 1);
      Atomics.notify(ctrl, 1);
      // Resuming clears the acknowledgement; waiting on it (not on the state) means a resume
      // followed at once by the next pause is still seen, and acknowledged again.
      while (Atomics.load(ctrl, 1) === 1 && Atomics.load(ctrl, 0) !== STOP) Atomics.wait(ctrl, 1, 1, 1000);
      continue;
    }
    if (rand(3) === 0) hold();
    else cycle(targets[rand(targets.length)]);
    if (!frantic()) spin(rand(1500));
  }
}

try {
  main();
} catch (err) {
  // The main thread is blocked in Atomics.wait and sees no 'error' event: say so through the control block.
  writeSync(2, `host actor failed: ${err?.stack ?? err}\n`);
  Atomics.store(ctrl, 7, 1);
  Atomics.store(ctrl, 1, 1);
  Atomics.notify(ctrl, 1);
}
closeSync(rootFd);
