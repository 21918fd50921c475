/**
 * The advanced panel: load any WASI tool (its .wasm and tool-spec.json),
 * register it with the page's Corral, and run it (or a bundled tool) with a
 * form generated from its input_schema, showing the whole result envelope.
 * Folders picked for the spec's mounts become in-memory trees: the tool sees
 * them and nothing else, and never reaches the network.
 */
import type { BrowserCorral } from '@corral/browser';
import type { InvokeOptions, InvokeResult, MemoryTree, MountBinding, Tool } from '@corral/core';
import { h } from './dom.js';
import { formatBytes, formatMs, type Strings } from './i18n.js';
import { FormError, fieldsFromSchema, initialValue, inputFromValues, type Field, type FieldValue } from './schema-form.js';

interface ToolState {
  values: Record<string, FieldValue>;
  raw: boolean;
  rawText: string;
  env: Record<string, string>;
  mounts: Record<string, { tree: MemoryTree; label: string }>;
}

const keyOf = (tool: Tool) => `${tool.spec.name}@${tool.spec.version}`;

export function mountAdvanced(
  container: HTMLElement,
  options: { ready: () => Promise<BrowserCorral>; strings: Strings },
): { setStrings(s: Strings): void } {
  let t = options.strings;
  let corral: BrowserCorral | null = null;
  let tools: Tool[] = [];
  let selected: string | null = null;
  const perTool = new Map<string, ToolState>();
  const pending: { wasm: File | null; spec: File | null } = { wasm: null, spec: null };
  let loadMessage: { ok: boolean; text: string } | null = null;
  let runMessage: string | null = null;
  let envelope: { result: InvokeResult | null; text: string } | null = null;
  let running = false;

  const stateOf = (tool: Tool): ToolState => {
    let s = perTool.get(keyOf(tool));
    if (!s) {
      const fields = fieldsFromSchema(tool.spec.input_schema) ?? [];
      s = {
        values: Object.fromEntries(fields.map((f) => [f.name, initialValue(f)])),
        raw: fieldsFromSchema(tool.spec.input_schema) === null,
        rawText: '{}',
        env: {},
        mounts: {},
      };
      perTool.set(keyOf(tool), s);
    }
    return s;
  };

  const current = (): Tool | undefined => tools.find((x) => keyOf(x) === selected);

  // ---- loading a tool ------------------------------------------------------------

  const takeFiles = (files: Iterable<File>) => {
    for (const file of files) {
      if (file.name.endsWith('.wasm')) pending.wasm = file;
      else if (file.name.endsWith('.json')) pending.spec = file;
    }
    loadMessage = null;
    draw();
  };

  const register = async () => {
    if (!corral || !pending.wasm || !pending.spec) return;
    try {
      let spec: unknown;
      try {
        spec = JSON.parse(await pending.spec.text());
      } catch (err) {
        throw new Error(`${pending.spec.name}: ${(err as Error).message}`);
      }
      const tool = await corral.register(spec, new Uint8Array(await pending.wasm.arrayBuffer()), pending.wasm.name);
      tools = corral.registry.list();
      selected = keyOf(tool);
      loadMessage = { ok: true, text: t.registered(tool.spec.name, tool.spec.version) };
      pending.wasm = pending.spec = null;
      envelope = null;
    } catch (err) {
      const e = err as Error & { code?: string };
      loadMessage = { ok: false, text: e.code ? `${e.code}: ${e.message}` : e.message };
    }
    draw();
  };

  // ---- running it --------------------------------------------------------------------

  const run = async () => {
    const tool = current();
    if (!corral || !tool || running) return;
    const s = stateOf(tool);
    const fields = fieldsFromSchema(tool.spec.input_schema);
    let input: unknown;
    try {
      input = s.raw || !fields ? JSON.parse(s.rawText) : inputFromValues(fields, s.values);
    } catch (err) {
      runMessage =
        err instanceof FormError
          ? err.message === 'required'
            ? `${err.field}: ${t.required}`
            : t.invalidJson(err.field, err.message)
          : t.invalidJson('input', (err as Error).message);
      draw();
      return;
    }
    const mounts: MountBinding[] = (tool.spec.mounts ?? [])
      .filter((m) => s.mounts[m.guest])
      .map((m) => ({ guest: m.guest, access: m.access, source: { kind: 'memory', tree: s.mounts[m.guest]!.tree } }));
    const invokeOptions: InvokeOptions = { mounts };
    const env = Object.fromEntries(Object.entries(s.env).filter(([, v]) => v !== ''));
    if (Object.keys(env).length) invokeOptions.env = env;
    running = true;
    runMessage = null;
    draw();
    try {
      const result = await corral.invokeTool(tool, input, invokeOptions);
      let text = JSON.stringify(result, null, 2);
      if (text.length > 400_000) text = `${text.slice(0, 400_000)}\n… (${formatBytes(text.length)} in all)`;
      envelope = { result, text };
    } catch (err) {
      envelope = { result: null, text: String((err as Error).message ?? err) };
    } finally {
      running = false;
      draw();
    }
  };

  // ---- drawing ---------------------------------------------------------------------------

  const fieldControl = (tool: Tool, field: Field): HTMLElement => {
    const s = stateOf(tool);
    const id = `adv-${keyOf(tool)}-${field.name}`.replace(/[^a-zA-Z0-9_-]/g, '_');
    const value = s.values[field.name] ?? initialValue(field);
    const set = (v: FieldValue) => (s.values[field.name] = v);
    const label = h('span', {}, field.name, field.required ? h('span', { class: 'req' }, t.required) : null);
    const help = field.description ? h('small', { id: `${id}-help` }, field.description) : null;
    const described = field.description ? `${id}-help` : undefined;
    if (field.kind === 'boolean') {
      return h(
        'label',
        { class: 'field check' },
        h('input', {
          type: 'checkbox',
          id,
          checked: value === true,
          'aria-describedby': described,
          onchange: (e: Event) => set((e.target as HTMLInputElement).checked),
        }),
        label,
        help,
      );
    }
    let control: HTMLElement;
    const onInput = (e: Event) => set((e.target as HTMLInputElement).value);
    if (field.kind === 'enum') {
      const select = h(
        'select',
        { id, 'aria-describedby': described, onchange: onInput },
        field.required ? null : h('option', { value: '' }, '—'),
        ...field.options!.map((o) => h('option', { value: JSON.stringify(o) }, String(o))),
      );
      select.value = String(value);
      control = select;
    } else if (field.kind === 'text' || field.kind === 'json') {
      const area = h('textarea', {
        id,
        spellcheck: 'false',
        'aria-describedby': described,
        oninput: onInput,
        placeholder: field.kind === 'json' ? 'JSON' : '',
      });
      area.value = String(value);
      control = area;
    } else {
      const number = field.kind === 'number' || field.kind === 'integer';
      control = h('input', {
        id,
        type: number ? 'number' : 'text',
        value: String(value),
        step: field.kind === 'integer' ? 1 : number ? 'any' : undefined,
        min: field.minimum,
        max: field.maximum,
        pattern: field.pattern,
        'aria-describedby': described,
        oninput: onInput,
      });
    }
    return h('label', { class: 'field', for: id }, label, control, help);
  };

  const mountControl = (tool: Tool, guest: string, access: string): HTMLElement => {
    const s = stateOf(tool);
    const picked = s.mounts[guest];
    const input = h('input', { type: 'file', webkitdirectory: true, multiple: true });
    input.addEventListener('change', async () => {
      const files = [...(input.files ?? [])];
      if (files.length === 0) return;
      const tree: MemoryTree = {};
      let bytes = 0;
      for (const file of files) {
        const parts = (file.webkitRelativePath || file.name).split('/').slice(1);
        if (parts.length === 0) parts.push(file.name);
        let dir = tree;
        for (const part of parts.slice(0, -1)) dir = (dir[part] ??= {}) as MemoryTree;
        const data = new Uint8Array(await file.arrayBuffer());
        dir[parts[parts.length - 1]!] = data;
        bytes += data.length;
      }
      const folder = (files[0]!.webkitRelativePath || files[0]!.name).split('/')[0];
      s.mounts[guest] = { tree, label: t.reviewPicked(folder ?? '', files.length, formatBytes(bytes)) };
      draw();
    });
    return filePicker(t.mountFolder(guest, access), t.chooseFolder, input, picked?.label ?? null);
  };

  /** A file input drawn like the page's main picker: a button-like label around the hidden input, and what was chosen beside it. */
  let pickers = 0;
  const filePicker = (title: string, choose: string, input: HTMLInputElement, chosen: string | null): HTMLElement => {
    const id = `adv-picker-${pickers++}`;
    input.classList.add('visually-hidden');
    input.setAttribute('aria-describedby', `${id}-title ${id}-chosen`);
    return h(
      'div',
      { class: 'field' },
      h('span', { id: `${id}-title` }, title),
      h(
        'div',
        { class: 'row' },
        h('label', { class: 'button ghost picker' }, h('span', {}, choose), input),
        h('small', { id: `${id}-chosen`, class: chosen ? 'chosen' : 'chosen none' }, chosen ?? t.nothingChosen),
      ),
    );
  };

  /** The result, readable: what happened, the output, any error; the whole envelope folded away below. */
  const resultView = (e: { result: InvokeResult | null; text: string }): HTMLElement => {
    const r = e.result;
    const view = h('div', { class: `result-view ${r?.ok ? 'ok' : 'failed'}`, id: 'adv-result' });
    if (r) {
      view.append(
        h(
          'p',
          { class: `message ${r.ok ? 'ok' : 'error'}`, role: 'status' },
          r.ok ? t.resultOk(formatMs(r.duration_ms)) : t.resultFailed(formatMs(r.duration_ms)),
        ),
      );
      if (r.ok) {
        const out = typeof r.output === 'string' ? r.output : JSON.stringify(r.output, null, 2);
        view.append(
          h('h4', {}, t.output),
          h('pre', { class: 'output', tabindex: 0 }, out.length > 200_000 ? `${out.slice(0, 200_000)}\n…` : out),
        );
      } else if (r.error) {
        view.append(h('h4', {}, t.toolError), h('p', { class: 'error-message' }, h('code', {}, r.error.code), ` ${r.error.message}`));
        if (r.stderr_tail) view.append(h('h4', {}, t.stderr), h('pre', { class: 'output', tabindex: 0 }, r.stderr_tail));
      }
    }
    view.append(
      h(
        'details',
        { class: 'envelope-details', open: r === null },
        h('summary', {}, t.envelopeJson),
        h('pre', { class: 'envelope', id: 'adv-envelope', tabindex: 0 }, e.text),
      ),
    );
    return view;
  };

  const draw = () => {
    pickers = 0;
    const tool = current();
    const loadPanel = h(
      'section',
      { class: 'panel', 'aria-labelledby': 'adv-load' },
      h('h3', { id: 'adv-load' }, t.register),
      filePicker(
        t.toolWasm,
        t.chooseWasm,
        h('input', {
          type: 'file',
          accept: '.wasm,application/wasm',
          id: 'adv-wasm',
          onchange: (e: Event) => takeFiles((e.target as HTMLInputElement).files ?? []),
        }),
        pending.wasm ? `${pending.wasm.name} · ${formatBytes(pending.wasm.size)}` : null,
      ),
      filePicker(
        t.toolSpec,
        t.chooseSpec,
        h('input', {
          type: 'file',
          accept: '.json,application/json',
          id: 'adv-spec',
          onchange: (e: Event) => takeFiles((e.target as HTMLInputElement).files ?? []),
        }),
        pending.spec ? pending.spec.name : null,
      ),
      h(
        'div',
        { class: 'row' },
        h(
          'button',
          { type: 'button', id: 'adv-register', disabled: !corral || !pending.wasm || !pending.spec, onclick: () => void register() },
          t.register,
        ),
      ),
      loadMessage
        ? h('p', { class: `message ${loadMessage.ok ? 'ok' : 'error'}`, role: 'status', id: 'adv-load-message' }, loadMessage.text)
        : null,
    );
    loadPanel.addEventListener('dragover', (e) => e.preventDefault());
    loadPanel.addEventListener('drop', (e) => {
      e.preventDefault();
      takeFiles(e.dataTransfer?.files ?? []);
    });

    const runPanel = h('section', { class: 'panel', 'aria-labelledby': 'adv-run' }, h('h3', { id: 'adv-run' }, t.run));
    if (!corral) runPanel.append(h('p', { class: 'message' }, t.preparing));
    else {
      const select = h(
        'select',
        {
          id: 'adv-tool',
          onchange: (e: Event) => ((selected = (e.target as HTMLSelectElement).value), (envelope = null), (runMessage = null), draw()),
        },
        ...tools.map((x) => h('option', { value: keyOf(x) }, `${x.spec.name} ${x.spec.version}`)),
      );
      select.value = selected ?? '';
      runPanel.append(h('label', { class: 'field', for: 'adv-tool' }, h('span', {}, t.tool), select));
    }
    if (tool) {
      const s = stateOf(tool);
      const fields = fieldsFromSchema(tool.spec.input_schema);
      if (tool.spec.description) runPanel.append(h('small', {}, tool.spec.description));
      const fieldset = h(
        'fieldset',
        { class: 'field', style: 'border:0;padding:0;margin:0;display:flex;flex-direction:column;gap:10px' },
        h('legend', {}, t.inputForm),
      );
      if (fields) {
        fieldset.append(
          h(
            'label',
            { class: 'field check' },
            h('input', {
              type: 'checkbox',
              id: 'adv-raw',
              checked: s.raw,
              onchange: (e: Event) => {
                s.raw = (e.target as HTMLInputElement).checked;
                if (s.raw) {
                  try {
                    s.rawText = JSON.stringify(inputFromValues(fields, s.values), null, 2);
                  } catch {
                    // keep the last raw text
                  }
                }
                draw();
              },
            }),
            h('span', {}, t.rawJson),
          ),
        );
      }
      if (s.raw || !fields) {
        const area = h('textarea', {
          id: 'adv-raw-json',
          spellcheck: 'false',
          'aria-label': t.rawJson,
          oninput: (e: Event) => (s.rawText = (e.target as HTMLTextAreaElement).value),
        });
        area.value = s.rawText;
        fieldset.append(area);
      } else {
        fieldset.append(...fields.map((f) => fieldControl(tool, f)));
      }
      runPanel.append(fieldset);
      for (const m of tool.spec.mounts ?? []) runPanel.append(mountControl(tool, m.guest, m.access));
      for (const name of tool.spec.env ?? []) {
        const input = h('input', {
          type: 'text',
          value: s.env[name] ?? '',
          oninput: (e: Event) => (s.env[name] = (e.target as HTMLInputElement).value),
        });
        runPanel.append(h('label', { class: 'field' }, h('span', {}, t.envVar(name)), input));
      }
      runPanel.append(
        h(
          'div',
          { class: 'row' },
          h(
            'button',
            { type: 'button', class: 'primary', id: 'adv-run-button', disabled: running, onclick: () => void run() },
            running ? t.running : t.run,
          ),
        ),
      );
      if (runMessage) runPanel.append(h('p', { class: 'message error', role: 'alert' }, runMessage));
      if (envelope) runPanel.append(h('h3', {}, t.envelope), resultView(envelope));
    }
    container.replaceChildren(h('p', { class: 'intro' }, t.advancedIntro), loadPanel, runPanel);
  };

  draw();
  void options.ready().then((c) => {
    corral = c;
    tools = c.registry.list();
    selected ??= tools[0] ? keyOf(tools[0]) : null;
    draw();
  });
  return {
    setStrings(s: Strings) {
      t = s;
      draw();
    },
  };
}
