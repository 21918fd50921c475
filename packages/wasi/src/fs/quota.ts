/**
 * The disk quota of one call (resources.disk_mb), shared by all its
 * writable mounts and /tmp: bytes the call adds to files, plus a fixed cost
 * per entry it creates. Removing frees nothing, so removing what was there
 * before the call cannot buy room.
 */

/** What creating one entry (file, folder, link) costs against the disk quota, like an inode and a directory slot. */
export const ENTRY_BYTES = 512;

/** Bytes a call may add to files, across all its writable mounts and /tmp. */
export class DiskQuota {
  readonly limitBytes: number;
  usedBytes = 0;
  /** Set once a write was refused, so the run can report E_RESOURCE_EXHAUSTED (disk). */
  exceeded = false;

  constructor(limitBytes: number) {
    this.limitBytes = limitBytes;
  }

  /** Account for `bytes` of growth, or refuse the write that would cause it. */
  charge(bytes: number): void {
    if (!Number.isFinite(bytes)) throw new TypeError(`disk quota charged a non-number (${bytes})`);
    if (bytes <= 0) return;
    if (this.usedBytes + bytes > this.limitBytes) {
      this.exceeded = true;
      throw 'insufficient-space';
    }
    this.usedBytes += bytes;
  }

  /** Charge for one entry (file, folder, link) the call creates. */
  chargeEntry(): void {
    this.charge(ENTRY_BYTES);
  }

  /** A create that was charged failed: give its cost back. (Removing an entry frees nothing, as removing bytes does not.) */
  refundEntry(): void {
    this.usedBytes = Math.max(0, this.usedBytes - ENTRY_BYTES);
  }
}
