/** What `corral policy`, `approve`, `approvals` and `audit` share: who acts, the store, the gate, how records print. */
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import { isoFromNs, type ApprovalRecord, type AuditEvent, type PolicyGate, type Store } from '@corral/core';
import { openPolicyGate } from '../policy-gate.js';
import { SqliteStore, defaultStorePath } from '../store-sqlite.js';
import { isPostgresUrl, openPostgresStore } from '../store-url.js';
import { UsageError, cell } from './shared.js';

/** Who is acting: --by, else the OS user. */
export function actor(by: string | undefined): string {
  if (by !== undefined) {
    const who = by.trim();
    if (who === '' || who.length > 256) throw new UsageError('--by takes a name of 1 to 256 characters.');
    return who;
  }
  try {
    return userInfo().username || process.env.USER || 'unknown';
  } catch {
    return process.env.USER || 'unknown';
  }
}

/** The store that keeps approvals and the audit trail: --store, else the default; created when missing (a grant must be recorded). */
export function openStore(path: string | undefined): Promise<Store> {
  const given = path ?? defaultStorePath();
  return isPostgresUrl(given) ? openPostgresStore(given) : SqliteStore.open(resolve(given));
}

export function gateFor(store: Store, policyPath: string | undefined): PolicyGate {
  return openPolicyGate({ store, ...(policyPath !== undefined ? { policyPath } : {}) });
}

/** "2026-11-29 09:47:06" (UTC). */
export const when = (ns: string) => isoFromNs(ns).slice(0, 19).replace('T', ' ');

/** What an approval is for, on one line: "file-stats@1.0.0", or "step sign-off of review-patch (run RUN)". */
export function approvalSubject(a: ApprovalRecord): string {
  return a.workflow_run_id === null ? `${a.tool}@${a.version}` : `step ${a.workflow_step} of ${a.tool} (run ${a.workflow_run_id})`;
}

/** A workflow step's prompt as one table cell, at most `max` characters. */
export function promptText(a: ApprovalRecord, max = 80): string {
  const p = (a.prompt ?? '').replace(/\s+/g, ' ').trim();
  return p === '' ? 'no prompt' : p.length > max ? `${p.slice(0, max - 1)}…` : p;
}

/** An approval's folders on one line: "/workspace → /home/ada/src (read)". */
export function foldersText(a: ApprovalRecord): string {
  return a.folders.map((f) => `${f.guest} → ${f.folder} (${f.access})`).join(', ') || 'no folders';
}

/** One audit event's "what", in words. */
export function auditSummary(e: AuditEvent): string {
  const d = e.detail;
  const s = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  // A workflow step's approval: which step of which run, not the (empty) call it does not hold.
  if (typeof d.workflow_run_id === 'string') {
    const step = `step ${s(d.workflow_step)} of run ${d.workflow_run_id}`;
    if (e.action === 'approval_requested') return `${e.approval_id} ${step}${d.prompt ? `: ${s(d.prompt)}` : ''}`;
    if (e.action === 'approve' || e.action === 'reject' || e.action === 'approval_revoked')
      return `${e.approval_id} ${step}${d.comment ? `: ${s(d.comment)}` : ''}`;
  }
  switch (e.action) {
    case 'grant':
    case 'revoke':
      return Array.isArray(d.changes) ? d.changes.map(s).join('; ') : s(d);
    case 'deny':
      return `${s(d.reason)}: ${s(d.message)}`;
    case 'approval_requested':
      return `${e.approval_id} input ${String(d.input_sha256 ?? '').slice(0, 12)}… folders ${
        Array.isArray(d.folders)
          ? d.folders.map((f: { guest?: unknown; folder?: unknown }) => `${s(f.guest)} → ${s(f.folder)}`).join(', ') || 'none'
          : 'none'
      }`;
    case 'approve':
      return `${e.approval_id} scope ${s(d.scope)}${d.comment ? `: ${s(d.comment)}` : ''}`;
    case 'reject':
    case 'approval_revoked':
      return `${e.approval_id}${d.comment ? `: ${s(d.comment)}` : ''}`;
    default:
      return s(d);
  }
}

/** Rows as aligned columns, each cell escaped for the terminal first. */
export function table(header: string[], rows: string[][]): string {
  const escaped = rows.map((r) => r.map(cell));
  const widths = header.map((h, i) => Math.max(h.length, ...escaped.map((r) => r[i]!.length)));
  return [header, ...escaped].map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}
