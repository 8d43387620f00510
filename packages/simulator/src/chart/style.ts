import { px } from './svg.js';

/**
 * How one line is drawn. Colours are the Okabe–Ito palette (safe for colour-blind readers);
 * as they print as similar greys, each line also has its own dash pattern and marker.
 */
export interface LineStyle {
  color: string;
  dash: string | undefined;
  marker: 'circle' | 'square' | 'triangle' | 'diamond' | 'cross' | 'none';
  width: number;
}

export const LINE_STYLES: readonly LineStyle[] = [
  { color: '#0072B2', dash: undefined, marker: 'circle', width: 2.2 },
  { color: '#D55E00', dash: '9 4', marker: 'square', width: 2.2 },
  { color: '#009E73', dash: '2 3', marker: 'triangle', width: 2.4 },
  { color: '#CC79A7', dash: '12 3 3 3', marker: 'diamond', width: 2.2 },
  { color: '#E69F00', dash: '5 2', marker: 'cross', width: 2.2 },
  { color: '#000000', dash: '1 4', marker: 'none', width: 2 },
];

/** The offered load: a light grey area behind the lines, whatever the palette. */
export const OFFERED = { fill: '#e4e4e4', stroke: '#8c8c8c' } as const;

export function strokeAttributes(style: LineStyle): string {
  return `fill="none" stroke="${style.color}" stroke-width="${style.width}"${style.dash ? ` stroke-dasharray="${style.dash}"` : ''} stroke-linejoin="round"`;
}

/** A marker centred on (x, y), white-filled so it stays visible on top of other lines. */
export function marker(style: LineStyle, x: number, y: number, size = 4.5): string {
  const paint = `fill="#ffffff" stroke="${style.color}" stroke-width="1.8"`;
  const s = size;
  switch (style.marker) {
    case 'circle':
      return `<circle cx="${px(x)}" cy="${px(y)}" r="${px(s)}" ${paint}/>`;
    case 'square':
      return `<rect x="${px(x - s)}" y="${px(y - s)}" width="${px(2 * s)}" height="${px(2 * s)}" ${paint}/>`;
    case 'triangle':
      return `<path d="M${px(x)} ${px(y - s * 1.2)}L${px(x + s * 1.1)} ${px(y + s * 0.8)}L${px(x - s * 1.1)} ${px(y + s * 0.8)}Z" ${paint}/>`;
    case 'diamond':
      return `<path d="M${px(x)} ${px(y - s * 1.3)}L${px(x + s * 1.1)} ${px(y)}L${px(x)} ${px(y + s * 1.3)}L${px(x - s * 1.1)} ${px(y)}Z" ${paint}/>`;
    case 'cross':
      return `<path d="M${px(x - s)} ${px(y - s)}L${px(x + s)} ${px(y + s)}M${px(x + s)} ${px(y - s)}L${px(x - s)} ${px(y + s)}" stroke="${style.color}" stroke-width="2.2"/>`;
    case 'none':
      return '';
  }
}
