/**
 * The text of an HTML message part, for its plain-text part: what a reader sees, in the same words. The end
 * of a block (`</p>`, `</div>`, a heading, a list item, a table row) ends a paragraph and `<br>` a line; a
 * link keeps its address after its text (unless the text is the address); every other tag goes, entities
 * are decoded and runs of spaces fold into one. One pass over the HTML, so a large message costs no more
 * than its length.
 */
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

const BLOCKS = new Set(['p', 'div', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'li', 'tr', 'table', 'ul', 'ol', 'blockquote']);

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,8});/gi, (entity, body: string) => {
    if (body[0] === '#') {
      const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : entity;
    }
    return ENTITIES[body.toLowerCase()] ?? entity;
  });
}

export function htmlToText(html: string): string {
  let out = '';
  const anchors: Array<{ href: string | null; start: number }> = [];
  let at = 0;
  while (at < html.length) {
    const open = html.indexOf('<', at);
    const close = open === -1 ? -1 : html.indexOf('>', open + 1);
    if (close === -1) {
      out += html.slice(at);
      break;
    }
    out += html.slice(at, open);
    at = close + 1;
    const tag = html.slice(open + 1, close);
    const name = /^(\/?)([a-z][a-z0-9]*)/i.exec(tag);
    if (!name) continue;
    const closing = name[1] === '/';
    const element = name[2]!.toLowerCase();
    if (element === 'br') out += '\n';
    else if (closing && BLOCKS.has(element)) out += '\n\n';
    else if (element === 'a' && !closing) anchors.push({ href: /\bhref\s*=\s*"([^"]*)"/i.exec(tag)?.[1] ?? null, start: out.length });
    else if (element === 'a') {
      const anchor = anchors.pop();
      const href = anchor?.href ? decodeEntities(anchor.href) : null;
      if (href && !decodeEntities(out.slice(anchor!.start)).includes(href)) out += ` (${href})`;
    }
  }
  return decodeEntities(out)
    .split('\n')
    .map((line) => line.replace(/[ \t\r\f\v]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
