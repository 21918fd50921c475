/**
 * The page's words in English and Chinese. The language switch sets both the
 * page and the `language` the diff-summary tool writes its summary in.
 */
import type { ReviewOutcome, StepState } from './review-model.js';
import type { FailureKind } from './failure.js';
import { summarySentence } from './sentence.js';
import type { DiffSummary, FileStatus, Language } from './summary.js';

/** The label after a count, in the right number: "1 file", "2 files". */
type Counted = 'files' | 'additions' | 'deletions' | 'hunks';
const EN_COUNTED: Record<Counted, [one: string, other: string]> = {
  files: ['file', 'files'],
  additions: ['addition', 'additions'],
  deletions: ['deletion', 'deletions'],
  hunks: ['hunk', 'hunks'],
};

export type TimeUnit = 'second' | 'minute' | 'hour' | 'day';
const EN_MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const ZH_UNITS: Record<TimeUnit, string> = { second: '秒', minute: '分钟', hour: '小时', day: '天' };

const en = {
  /** The page's language tag. */
  locale: 'en',
  title: 'Diff summarizer',
  skip: 'Skip to the diff input',
  tagline: 'Summaries of your diffs, computed on this machine by a sandboxed WASI tool. Nothing is uploaded.',
  languageLabel: 'Summary language',
  inputHeading: 'Your diff',
  inputLabel: 'Unified diff (git diff, git format-patch or diff -u output)',
  placeholder: 'Paste the output of `git diff` here, or drop a .diff / .patch file on this box.',
  dropHere: 'Drop the .diff or .patch file to load it',
  choose: 'Choose a file…',
  example: 'Try an example',
  clear: 'Clear',
  summarize: 'Summarize',
  summarizing: 'Summarizing…',
  shortcut: 'Ctrl+Enter',
  preparing: 'Preparing the sandbox…',
  preparingQueued: 'Preparing the sandbox… your diff is summarized as soon as it is ready',
  prepStart: 'Starting sandbox workers',
  prepTools: 'Loading the diff-summary tool',
  prepCompile: 'Loading the tool',
  prepWarm: 'Starting the tool in its sandbox',
  prepDone: 'Ready',
  prepFailed: 'The sandbox could not start',
  ready: 'Ready',
  readyOffline: 'Ready · works offline',
  offline: 'Offline',
  loadedFile: (name: string, size: string) => `Loaded ${name} (${size})`,
  bigFile: (name: string, size: string) =>
    `${name} (${size}) is loaded; the box shows its start, read-only. It is summarized in full; Clear to type instead.`,
  // ---- input: large and binary files (helper "input") ----
  pastedText: 'pasted text',
  binaryFile: 'This is a binary file',
  binaryMessage: (name: string, size: string) =>
    `${name} (${size}) has binary content (a NUL byte, or bytes that are not UTF-8 text, near its start), so it was not loaded or summarized.`,
  binaryHint: 'Pick a text diff: the output of git diff (or diff -u), a .diff or .patch file.',
  fileTooLarge: 'This file is too large',
  fileTooLargeMessage: (name: string, size: string, limit: string) => `${name} is ${size}; the summarizer reads diffs of up to ${limit}.`,
  fileTooLargeHint: 'Split the diff, e.g. run git diff -- <folder> for each part of the tree.',
  fileUnreadable: 'The file could not be read',
  fileRefused: (name: string, size: string) => `${name} (${size}) was not loaded.`,
  resultHeading: 'Summary',
  empty: 'The summary appears here: files changed, lines added and removed, and the largest changes.',
  failTitle: {
    'not-diff': 'This is not a diff',
    output: 'The summary is larger than the page allows',
    memory: 'The diff needs more memory than the tool may use',
    time: 'The summary took too long',
    'too-large': 'The diff is too large',
    tool: 'The tool stopped with an error',
    other: 'The tool failed',
  } satisfies Record<FailureKind, string>,
  failAdvice: {
    'not-diff': 'Paste the output of git diff (or diff -u), or drop a .diff / .patch file.',
    output: 'Summarize part of the change, e.g. git diff -- <folder>, and report this: the page sizes the limit to the diff.',
    memory: 'Split the diff, e.g. git diff -- <folder> for each top folder, and summarize the parts.',
    time: 'Try again with fewer tabs busy, or split the diff, e.g. git diff -- <folder>.',
    'too-large': 'The tool reads diffs up to 64 MiB. Split it, e.g. git diff -- <folder>, or leave out generated files.',
    tool: 'Check that the file is a complete diff; if it is, the message above says what the tool ran into.',
    other: 'Reload the page and try again.',
  } satisfies Record<FailureKind, string>,
  failLabel: {
    'not-diff': 'not a diff',
    output: 'summary too large',
    memory: 'out of memory',
    time: 'timed out',
    'too-large': 'diff too large',
    tool: 'tool error',
    other: 'failed',
  } satisfies Record<FailureKind, string>,
  problemsTruncated: 'The diff looks truncated',
  problemsDamaged: 'The diff has damaged hunks',
  problemsNote: 'git apply would refuse it. Everything that could be read is summarized below.',
  problemAt: (path: string, line: string) => `${path || '(no file)'}, line ${line}`,
  problemsMore: (n: number) => `and ${n} more`,
  files: 'files',
  additions: 'additions',
  deletions: 'deletions',
  hunks: 'hunks',
  counted: (n: number, what: Counted) => EN_COUNTED[what][n === 1 ? 0 : 1],
  totals: 'Totals',
  diffstat: 'Size of the change',
  droppedMany: (n: number, name: string) => `${n} files were dropped; one diff is summarized at a time, so only ${name} was loaded.`,
  fromHistory: (title: string) => `“${title}” from the history`,
  toolTime: 'time taken',
  pageTime: (ms: string) => `${ms} in all, with saving it to the history`,
  chartHeading: 'Largest changes',
  chartLabel: (n: number) => `Bar chart of the ${n} files with the most changed lines`,
  tableHeading: 'Files',
  filter: 'Filter files',
  colStatus: 'Status',
  colFile: 'File',
  colAdd: 'Added',
  colDel: 'Removed',
  colHunks: 'Hunks',
  showAll: (n: number) => `Show all ${n} files`,
  noMatch: 'No file matches the filter.',
  noChanges: 'The diff has no changes.',
  renamedFrom: 'from',
  mode: (a: string, b: string) => `mode ${a} → ${b}`,
  // Navigating the file list (render.ts).
  nav: {
    viewAs: 'Show files',
    viewTree: 'By folder',
    viewList: 'As a list',
    byStatus: 'Filter by status',
    extension: 'Type',
    allExtensions: 'All types',
    noExtension: 'no extension',
    expandAll: 'Expand all',
    collapseAll: 'Collapse all',
    clearFilters: 'Clear filters',
    diffstat: 'Size of the change',
    folderFiles: (n: number) => (n === 1 ? '1 file' : `${n} files`),
    shown: (shown: string, total: string) => (shown === total ? `${total} files` : `${shown} of ${total} files`),
    showMore: (n: number) => `Show ${n} more`,
    openFile: (path: string) => `Show the changes to ${path}`,
    fileChanges: (path: string) => `Changes to ${path}`,
    reading: 'Reading the diff…',
    noHunks: 'No line changes to show: a binary file, or only a rename or a mode change.',
    notFound: 'The lines of this file could not be found in the diff.',
    noText: 'The diff text is not available for this summary.',
    moreLines: (n: number) => `Show ${n} more lines`,
  },
  historyHeading: 'History',
  historyEmpty: 'Summaries you make are kept here, on this device.',
  historyUnavailable: 'History is unavailable: this browser did not let the page keep data.',
  historyNoInput: 'input not kept',
  andMore: (path: string, n: number) => `${path} and ${n} more`,
  /** When a history entry was made: `n` whole units ago (0 seconds: just now). */
  ago: (n: number, unit: TimeUnit) =>
    unit === 'second' ? 'just now' : n === 1 && unit === 'day' ? 'yesterday' : `${n} ${unit}${n === 1 ? '' : 's'} ago`,
  /** An older entry's date (`month` 1-12). */
  onDate: (year: number, month: number, day: number) => `${EN_MONTHS[month - 1]} ${day}, ${year}`,
  reopen: 'Reopen',
  clearHistory: 'Clear history',
  confirmClear: 'Remove every summary kept on this device?',
  reviewHeading: 'Review and apply',
  reviewIntro:
    'Run the patch-review workflow on this diff, offline: it summarizes the diff, checks that it applies to your files and scans them, then waits for your sign-off before applying it. Your files are copied into this browser; the patch is applied to that copy, nothing is uploaded.',
  reviewFolder: 'Folder the diff applies to',
  reviewNoFolder: 'No folder picked: the diff is checked against an empty one, so only new files apply.',
  reviewPicked: (name: string, files: number, size: string) => `${name}/ · ${files} files · ${size}`,
  reviewLeftOut: (n: number) => `${n} files in .git and node_modules left out`,
  reviewStart: 'Review this diff',
  reviewNeedsDiff: 'Paste a diff above first.',
  reviewCopying: 'Copying your files into this browser…',
  reviewPreparing: 'Preparing the review tools (once per browser)…',
  reviewRunning: 'Running the review…',
  reviewUnavailable: 'Reviews are unavailable: this browser did not let the page keep data.',
  runLabel: (id: string) => `Run ${id}`,
  stepsLabel: 'Steps of the review',
  stepState: {
    pending: 'pending',
    running: 'running',
    waiting: 'waiting for you',
    succeeded: 'done',
    failed: 'failed',
    skipped: 'skipped',
  } satisfies Record<StepState, string>,
  outcome: {
    running: 'Running',
    waiting: 'Waiting for sign-off',
    applied: 'Applied',
    'not-applied': 'Not applied',
    'does-not-apply': 'Does not apply',
    rejected: 'Rejected',
    failed: 'Failed',
    cancelled: 'Cancelled',
  } satisfies Record<ReviewOutcome, string>,
  interrupted: 'Interrupted',
  approvalHeading: 'Your sign-off',
  comment: 'Comment (optional)',
  approve: 'Approve and apply',
  reject: 'Reject',
  continueRun: 'Continue this run',
  outputsHeading: 'Outputs of the review',
  patchedFiles: 'Patched files (the copy in this browser)',
  download: (path: string) => `Download ${path}`,
  fileGone: (path: string) => `${path} is no longer in this browser's copy.`,
  runsHeading: 'Reviews',
  runsEmpty: 'Reviews you run are kept here, on this device.',
  advancedHeading: 'Advanced: run any WASI tool',
  advancedIntro:
    'Load a tool (its .wasm and tool-spec.json), and run it in the same sandbox: no network, only the folders you pick, the limits its spec declares.',
  toolWasm: 'Tool (.wasm)',
  toolSpec: 'Contract (tool-spec.json)',
  register: 'Load tool',
  registered: (name: string, version: string) => `Loaded ${name} ${version}.`,
  tool: 'Tool',
  inputForm: 'Input',
  rawJson: 'Edit the input as JSON',
  mountFolder: (guest: string, access: string) => `Folder for ${guest} (${access})`,
  envVar: (name: string) => `Environment variable ${name}`,
  run: 'Run',
  running: 'Running…',
  envelope: 'Result envelope',
  envelopeJson: 'The whole result envelope (JSON)',
  output: 'Output',
  toolError: 'Error',
  stderr: 'Standard error (last lines)',
  resultOk: (ms: string) => `Succeeded in ${ms}`,
  resultFailed: (ms: string) => `Failed after ${ms}`,
  chooseWasm: 'Choose the .wasm…',
  chooseSpec: 'Choose the tool-spec.json…',
  chooseFolder: 'Choose a folder…',
  nothingChosen: 'nothing chosen',
  invalidJson: (field: string, message: string) => `${field}: not valid JSON (${message})`,
  required: 'required',
  footer: 'Corral runs WASI tools in sandboxed workers. This page keeps working with the network off once it has loaded.',
  swUpdate: 'A new version is ready.',
  reload: 'Reload',
  status: {
    added: 'added',
    deleted: 'deleted',
    modified: 'modified',
    renamed: 'renamed',
    copied: 'copied',
    binary: 'binary',
  } satisfies Record<FileStatus, string>,
};

export type Strings = typeof en;

const zh: Strings = {
  locale: 'zh-CN',
  title: 'Diff 摘要',
  skip: '跳到 diff 输入框',
  tagline: '在本机由沙箱中的 WASI 工具计算 diff 摘要，不上传任何内容。',
  languageLabel: '摘要语言',
  inputHeading: '你的 diff',
  inputLabel: '统一格式 diff（git diff、git format-patch 或 diff -u 的输出）',
  placeholder: '在此粘贴 `git diff` 的输出，或把 .diff / .patch 文件拖到这里。',
  dropHere: '松开以载入 .diff 或 .patch 文件',
  choose: '选择文件…',
  example: '试试示例',
  clear: '清空',
  summarize: '生成摘要',
  summarizing: '正在生成…',
  shortcut: 'Ctrl+Enter',
  preparing: '正在准备沙箱…',
  preparingQueued: '正在准备沙箱…准备好后立即生成摘要',
  prepStart: '启动沙箱 worker',
  prepTools: '载入 diff-summary 工具',
  prepCompile: '加载工具',
  prepWarm: '在沙箱中启动工具',
  prepDone: '就绪',
  prepFailed: '沙箱无法启动',
  ready: '就绪',
  readyOffline: '就绪 · 可离线使用',
  offline: '离线',
  loadedFile: (name, size) => `已载入 ${name}（${size}）`,
  bigFile: (name, size) => `已载入 ${name}（${size}）；此处只读显示其开头部分，摘要会覆盖完整内容；点“清空”可改为输入。`,
  pastedText: '粘贴的文本',
  binaryFile: '这是二进制文件',
  binaryMessage: (name, size) => `${name}（${size}）含有二进制内容（开头处有 NUL 字节或不是 UTF-8 文本的字节），因此未载入，也未生成摘要。`,
  binaryHint: '请选择文本 diff：git diff（或 diff -u）的输出，或 .diff / .patch 文件。',
  fileTooLarge: '文件太大',
  fileTooLargeMessage: (name, size, limit) => `${name} 大小为 ${size}；摘要工具最多读取 ${limit} 的 diff。`,
  fileTooLargeHint: '请拆分 diff，例如对每个目录分别运行 git diff -- <目录>。',
  fileUnreadable: '无法读取该文件',
  fileRefused: (name, size) => `${name}（${size}）未载入。`,
  resultHeading: '摘要',
  empty: '摘要会显示在这里：变更的文件、增删的行数，以及改动最大的文件。',
  failTitle: {
    'not-diff': '这不是 diff',
    output: '摘要超出了页面允许的大小',
    memory: '这个 diff 需要的内存超过了工具的上限',
    time: '生成摘要超时',
    'too-large': 'diff 太大',
    tool: '工具出错停止',
    other: '工具运行失败',
  },
  failAdvice: {
    'not-diff': '请粘贴 git diff（或 diff -u）的输出，或拖入 .diff / .patch 文件。',
    output: '请只摘要部分变更，例如 git diff -- <目录>，并反馈此问题：页面会按 diff 的大小设定上限。',
    memory: '请拆分 diff，例如对每个顶层目录运行 git diff -- <目录>，再分别生成摘要。',
    time: '请在其他标签页空闲时重试，或拆分 diff，例如 git diff -- <目录>。',
    'too-large': '工具最多读取 64 MiB 的 diff。请拆分，例如 git diff -- <目录>，或排除生成的文件。',
    tool: '请确认文件是完整的 diff；如果是，上面的消息说明了工具遇到的问题。',
    other: '请重新加载页面后重试。',
  },
  failLabel: {
    'not-diff': '不是 diff',
    output: '摘要过大',
    memory: '内存不足',
    time: '超时',
    'too-large': 'diff 过大',
    tool: '工具出错',
    other: '失败',
  },
  problemsTruncated: '这个 diff 似乎被截断了',
  problemsDamaged: '这个 diff 中有损坏的变更块',
  problemsNote: 'git apply 会拒绝它。下面是能读出的全部内容的摘要。',
  problemAt: (path, line) => `${path || '（无文件）'}，第 ${line} 行`,
  problemsMore: (n) => `还有 ${n} 处`,
  files: '个文件',
  additions: '行新增',
  deletions: '行删除',
  hunks: '个变更块',
  counted: (_n, what) => ({ files: '个文件', additions: '行新增', deletions: '行删除', hunks: '个变更块' })[what],
  totals: '合计',
  diffstat: '改动大小',
  droppedMany: (n, name) => `拖入了 ${n} 个文件；一次只生成一个 diff 的摘要，所以只载入了 ${name}。`,
  fromHistory: (title) => `历史中的“${title}”`,
  toolTime: '用时',
  pageTime: (ms) => `总计 ${ms}（含保存到历史）`,
  chartHeading: '改动最大的文件',
  chartLabel: (n) => `改动行数最多的 ${n} 个文件的条形图`,
  tableHeading: '文件',
  filter: '筛选文件',
  colStatus: '状态',
  colFile: '文件',
  colAdd: '新增',
  colDel: '删除',
  colHunks: '变更块',
  showAll: (n) => `显示全部 ${n} 个文件`,
  noMatch: '没有文件符合筛选条件。',
  noChanges: '这个 diff 没有变更。',
  renamedFrom: '原',
  mode: (a, b) => `权限 ${a} → ${b}`,
  nav: {
    viewAs: '显示文件',
    viewTree: '按文件夹',
    viewList: '列表',
    byStatus: '按状态筛选',
    extension: '类型',
    allExtensions: '全部类型',
    noExtension: '无扩展名',
    expandAll: '全部展开',
    collapseAll: '全部折叠',
    clearFilters: '清除筛选',
    diffstat: '改动规模',
    folderFiles: (n) => `${n} 个文件`,
    shown: (shown, total) => (shown === total ? `${total} 个文件` : `${shown} / ${total} 个文件`),
    showMore: (n) => `再显示 ${n} 个`,
    openFile: (path) => `查看 ${path} 的改动`,
    fileChanges: (path) => `${path} 的改动`,
    reading: '正在读取 diff…',
    noHunks: '没有可显示的行改动：二进制文件，或仅重命名或权限变更。',
    notFound: '在 diff 中找不到这个文件的行。',
    noText: '这条摘要没有可用的 diff 文本。',
    moreLines: (n) => `再显示 ${n} 行`,
  },
  historyHeading: '历史',
  historyEmpty: '生成过的摘要会保存在这台设备上。',
  historyUnavailable: '历史不可用：浏览器不允许此页面保存数据。',
  historyNoInput: '未保存输入',
  andMore: (path, n) => `${path} 等 ${n + 1} 个文件`,
  ago: (n, unit) => (unit === 'second' ? '刚刚' : n === 1 && unit === 'day' ? '昨天' : `${n} ${ZH_UNITS[unit]}前`),
  onDate: (year, month, day) => `${year}年${month}月${day}日`,
  reopen: '重新打开',
  clearHistory: '清除历史',
  confirmClear: '删除这台设备上保存的所有摘要？',
  reviewHeading: '审阅并应用',
  reviewIntro:
    '离线对这个 diff 运行 patch-review 工作流：生成摘要，检查它能否应用到你的文件并扫描这些文件，然后等待你签核再应用。你的文件会复制到这个浏览器中，补丁应用在这份副本上，不上传任何内容。',
  reviewFolder: 'diff 要应用到的文件夹',
  reviewNoFolder: '未选择文件夹：将对一个空文件夹检查 diff，只有新增文件能应用。',
  reviewPicked: (name, files, size) => `${name}/ · ${files} 个文件 · ${size}`,
  reviewLeftOut: (n) => `已略过 .git 和 node_modules 中的 ${n} 个文件`,
  reviewStart: '审阅这个 diff',
  reviewNeedsDiff: '请先在上方粘贴 diff。',
  reviewCopying: '正在把你的文件复制到浏览器中…',
  reviewPreparing: '正在准备审阅工具（每个浏览器只需一次）…',
  reviewRunning: '正在审阅…',
  reviewUnavailable: '审阅不可用：浏览器不允许此页面保存数据。',
  runLabel: (id) => `运行 ${id}`,
  stepsLabel: '审阅步骤',
  stepState: { pending: '等待中', running: '运行中', waiting: '等你决定', succeeded: '完成', failed: '失败', skipped: '跳过' },
  outcome: {
    running: '运行中',
    waiting: '等待签核',
    applied: '已应用',
    'not-applied': '未应用',
    'does-not-apply': '无法应用',
    rejected: '已拒绝',
    failed: '失败',
    cancelled: '已取消',
  },
  interrupted: '已中断',
  approvalHeading: '你的签核',
  comment: '备注（可选）',
  approve: '批准并应用',
  reject: '拒绝',
  continueRun: '继续这次运行',
  outputsHeading: '审阅的输出',
  patchedFiles: '已打补丁的文件（浏览器中的副本）',
  download: (path) => `下载 ${path}`,
  fileGone: (path) => `浏览器中的副本里已没有 ${path}。`,
  runsHeading: '审阅记录',
  runsEmpty: '你运行过的审阅会保存在这台设备上。',
  advancedHeading: '高级：运行任意 WASI 工具',
  advancedIntro: '载入一个工具（.wasm 和 tool-spec.json），在同一个沙箱里运行：没有网络，只能访问你选择的文件夹，受其规格声明的资源限制。',
  toolWasm: '工具（.wasm）',
  toolSpec: '契约（tool-spec.json）',
  register: '载入工具',
  registered: (name, version) => `已载入 ${name} ${version}。`,
  tool: '工具',
  inputForm: '输入',
  rawJson: '以 JSON 编辑输入',
  mountFolder: (guest, access) => `${guest} 对应的文件夹（${access}）`,
  envVar: (name) => `环境变量 ${name}`,
  run: '运行',
  running: '正在运行…',
  envelope: '结果信封',
  envelopeJson: '完整的结果信封（JSON）',
  output: '输出',
  toolError: '错误',
  stderr: '标准错误（最后几行）',
  resultOk: (ms) => `成功，用时 ${ms}`,
  resultFailed: (ms) => `失败，用时 ${ms}`,
  chooseWasm: '选择 .wasm…',
  chooseSpec: '选择 tool-spec.json…',
  chooseFolder: '选择文件夹…',
  nothingChosen: '未选择',
  invalidJson: (field, message) => `${field}：不是有效的 JSON（${message}）`,
  required: '必填',
  footer: 'Corral 在沙箱 worker 中运行 WASI 工具。页面载入一次之后，断网也能继续使用。',
  swUpdate: '新版本已就绪。',
  reload: '重新载入',
  status: { added: '新增', deleted: '删除', modified: '修改', renamed: '重命名', copied: '复制', binary: '二进制' },
};

export const STRINGS: Record<Language, Strings> = { en, zh };

/** The language to start in: the last one chosen, else the browser's. */
export function initialLanguage(): Language {
  try {
    const saved = localStorage.getItem('corral.language');
    if (saved === 'en' || saved === 'zh') return saved;
  } catch {
    // storage blocked: fall through
  }
  return navigator.language.toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

export function saveLanguage(lang: Language): void {
  try {
    localStorage.setItem('corral.language', lang);
  } catch {
    // storage blocked: the choice lasts for this visit
  }
}

/** Bytes in SI units (1 KB = 1,000 bytes), as file managers show a file's size: a 50,000,000-byte file is "50.0 MB". */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  if (n < 999_500) return `${(n / 1000).toFixed(n < 9_950 ? 1 : 0)} KB`;
  return `${(n / 1_000_000).toFixed(1)} MB`;
}

/**
 * Numbers are written one way on the whole page: grouped by three with a
 * comma (1,031), which is how both English and Chinese (zh-CN) write them.
 * Not Intl.NumberFormat: a page's first one loads ICU's data, a 90-290 ms
 * task here, on the way to the first summary.
 */
export function formatNumber(n: number, _t?: Strings): string {
  const [whole = '', fraction] = String(Math.abs(n)).split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+$)/g, ',');
  return `${n < 0 ? '-' : ''}${grouped}${fraction === undefined ? '' : `.${fraction}`}`;
}

export function formatMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : ms >= 10 ? `${ms.toFixed(0)} ms` : `${ms.toFixed(1)} ms`;
}

/**
 * The summary sentence as the page shows it: the tool's sentence, written
 * in the page's language and with its numbers formatted like the rest of
 * the page. Rebuilt from the files and totals only when that rebuilds the
 * tool's own sentence exactly (else the tool's words are shown as they are).
 */
export function shownSentence(output: DiffSummary, toolLanguage: Language, t: Strings): string {
  if (summarySentence(output.files, output.totals, toolLanguage) !== output.summary) return output.summary;
  return summarySentence(output.files, output.totals, t.locale === 'zh-CN' ? 'zh' : 'en', (n) => formatNumber(n, t));
}
