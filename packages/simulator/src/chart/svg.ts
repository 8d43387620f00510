// Characters outside XML 1.0's `Char`, forbidden even as references: a client key from a trace
// can hold one, and one makes the whole chart unreadable to a browser, so each shows as U+FFFD.
const forbidden = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

/** Escapes text for SVG content and attribute values. */
export const xml = (text: string): string =>
  text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replace(forbidden, '\uFFFD');

/** Two decimals at most: enough for pixels, and the files stay small and diff well. */
export const px = (value: number): string => String(Math.round(value * 100) / 100);

export const FONT = 'DejaVu Sans, Helvetica, Arial, sans-serif';

/** The width `content` takes at 13 px: 7.4 px, the average advance of a DejaVu Sans character. */
export const textWidth = (content: string): number => content.length * 7.4;

/**
 * `content` in lines of at most `width` px, broken between words, and a word longer than a
 * line (a client key: a trace's keys hold no spaces) broken where the line ends.
 */
export function wrapText(content: string, width: number): string[] {
  const perLine = Math.max(1, Math.floor(width / textWidth('x')));
  const lines: string[] = [];
  let line = '';
  for (const word of content.split(' ')) {
    const longer = line === '' ? word : `${line} ${word}`;
    if (textWidth(longer) <= width) {
      line = longer;
      continue;
    }
    if (line !== '') lines.push(line);
    line = word;
    while (line.length > perLine) {
      lines.push(line.slice(0, perLine));
      line = line.slice(perLine);
    }
  }
  lines.push(line);
  return lines;
}

export const text = (x: number, y: number, content: string, attributes = ''): string =>
  `<text x="${px(x)}" y="${px(y)}"${attributes ? ` ${attributes}` : ''}>${xml(content)}</text>`;

/** A whole document: white background, one font, the title read out by screen readers. */
export function document(width: number, height: number, title: string, body: string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="${FONT}" font-size="13" role="img">`,
    `<title>${xml(title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}
