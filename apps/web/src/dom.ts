/** A few lines of DOM building, so the views read like the markup they make. Text is always set as text, never as HTML. */
type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  return fill(document.createElement(tag), attrs, children);
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

function fill<E extends Element>(el: E, attrs: Attrs, children: Child[]): E {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'number' ? String(child) : child);
  }
  return el;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return el as T;
}

/**
 * A path as pieces that each end at a `/` (inline blocks: .path-part), so a
 * narrow column wraps it between folders, never inside a name or at its
 * hyphens; only a single name longer than the line is broken inside.
 */
export function pathParts(path: string): HTMLElement[] {
  return path.split(/(?<=\/)/).map((piece) => h('span', { class: 'path-part' }, piece));
}

/** Text with a line-break opportunity after each `/` (a sentence naming a path). */
export function slashBreaks(text: string): Array<string | HTMLElement> {
  const parts: Array<string | HTMLElement> = [];
  for (const piece of text.split(/(?<=\/)/)) parts.push(piece, document.createElement('wbr'));
  parts.pop();
  return parts;
}
