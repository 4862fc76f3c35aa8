/**
 * Assistant answers as Markdown, through JupyterLab's own parser and sanitizer (the rendermime
 * registry's `markdownParser` and `sanitizer`), never through a page-wide HTML path.
 *
 * An answer comes from a model, so it is data: the sanitizer keeps only text-structure tags (no
 * media, frame, form or style; an image becomes its alt text), links keep only `http(s)`/`mailto` targets and open in a new
 * window, and math is not typeset. The HTML is parsed in an inert document (nothing loads there),
 * then its nodes are adopted into the page. Without a Markdown parser there is no renderer, and
 * answers stay plain text.
 */

import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { shown } from './widgets/painter.js';

/** Renders `source` as sanitized Markdown into `host` (replacing its children). */
export type MarkdownFill = (source: string, host: HTMLElement) => Promise<void>;

/** Tags an answer may use: text structure only. */
const TAGS = [
  'p', 'br', 'hr', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'em', 'strong', 'b', 'i', 'del', 's',
  'code', 'pre', 'blockquote', 'ul', 'ol', 'li', 'table', 'thead', 'tbody', 'tr', 'th', 'td',
  'a', 'sup', 'sub', 'dl', 'dt', 'dd', 'kbd', 'span', 'img'
];
/** `img` keeps only its `alt`: it is replaced by that text below, so no image ever loads. */
const ATTRIBUTES = { a: ['href', 'title'], ol: ['start'], th: ['align'], td: ['align'], img: ['alt'] };
const LINK_SCHEMES = new Set(['http:', 'https:', 'mailto:']);

/** Keep a link only to an absolute http(s) or mailto address; open it outside the page. */
function tameLink(a: HTMLAnchorElement): void {
  let scheme = '';
  try {
    scheme = new URL(a.getAttribute('href') ?? '').protocol;
  } catch {
    scheme = ''; // relative or malformed: not a link here
  }
  if (!LINK_SCHEMES.has(scheme)) {
    a.removeAttribute('href');
    return;
  }
  a.target = '_blank';
  a.rel = 'noopener noreferrer nofollow';
}

/** The Markdown renderer of `registry`, or `null` when it has no Markdown parser. */
export function markdownFill(registry: IRenderMimeRegistry | null): MarkdownFill | null {
  const parser = registry?.markdownParser;
  if (!registry || !parser) {
    return null;
  }
  const sanitizer = registry.sanitizer;
  return async (source: string, host: HTMLElement): Promise<void> => {
    // Bidirectional controls become visible marks first (`shown`), as everywhere data is shown.
    const html = sanitizer.sanitize(await parser.render(shown(source)), {
      allowedTags: TAGS,
      allowedAttributes: ATTRIBUTES
    });
    const inert = document.implementation.createHTMLDocument('');
    const box = inert.createElement('div');
    box.innerHTML = html;
    box.querySelectorAll('a').forEach(tameLink);
    box.querySelectorAll('img').forEach(img => {
      const alt = img.getAttribute('alt');
      img.replaceWith(inert.createTextNode(alt ? `[image: ${alt}]` : '[image]'));
    });
    host.replaceChildren(...Array.from(box.childNodes, n => document.importNode(n, true)));
  };
}
