/**
 * An IP address as eight 16-bit groups; an IPv4 address is held IPv4-mapped
 * (`::ffff:a.b.c.d`), so one representation serves both families.
 */
export type IpGroups = readonly number[];

const ipv4Pattern = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const hexGroup = /^[0-9a-fA-F]{1,4}$/;

/**
 * Parses the address a framework reports for a client. Accepts what reaches apps in practice:
 * IPv4, IPv6 (compressed, with an embedded IPv4 tail, with a `%zone`), `[v6]`, `[v6]:port`
 * and `v4:port` (some load balancers append the port, which would let a client change its key
 * by changing its source port). Returns `undefined` for anything else.
 */
export function parseIp(text: string): IpGroups | undefined {
  let address = text.trim();
  if (address.startsWith('[')) {
    const close = address.indexOf(']');
    const rest = address.slice(close + 1);
    if (close < 0 || (rest !== '' && !isPort(rest))) return undefined;
    address = address.slice(1, close);
  } else if (/^\d+\.[\d.]*:/.test(address)) {
    const colon = address.indexOf(':');
    if (!isPort(address.slice(colon))) return undefined;
    address = address.slice(0, colon);
  }
  const zone = address.indexOf('%');
  if (zone >= 0) address = address.slice(0, zone);
  if (!address.includes(':')) return parseIpv4(address);
  return parseIpv6(address);
}

/** `:` and a port number from 0 to 65535. */
const isPort = (text: string): boolean => /^:\d{1,5}$/.test(text) && Number(text.slice(1)) <= 65_535;

function parseIpv4(text: string): IpGroups | undefined {
  if (!ipv4Pattern.test(text)) return undefined;
  const [a, b, c, d] = text.split('.').map(Number) as [number, number, number, number];
  return [0, 0, 0, 0, 0, 0xffff, (a << 8) | b, (c << 8) | d];
}

function parseIpv6(text: string): IpGroups | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = groupsOf(halves[0] as string, halves.length === 1);
  const tail = halves.length === 2 ? groupsOf(halves[1] as string, true) : [];
  if (head === undefined || tail === undefined) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  return [...head, ...new Array<number>(halves.length === 1 ? 0 : missing).fill(0), ...tail];
}

/** Groups of one side of `::`; only the last side may end in a dotted IPv4 tail. */
function groupsOf(part: string, mayEndInIpv4: boolean): number[] | undefined {
  if (part === '') return [];
  const groups: number[] = [];
  const pieces = part.split(':');
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i] as string;
    if (mayEndInIpv4 && i === pieces.length - 1 && piece.includes('.')) {
      const v4 = parseIpv4(piece);
      if (v4 === undefined) return undefined;
      groups.push(v4[6] as number, v4[7] as number);
    } else if (hexGroup.test(piece)) {
      groups.push(Number.parseInt(piece, 16));
    } else {
      return undefined;
    }
  }
  return groups;
}

/**
 * True when the address is an IPv4 address in IPv6 form, judged by its bits, not its spelling:
 * IPv4-mapped (`::ffff:a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`, RFC 2765) or the
 * deprecated IPv4-compatible (`::a.b.c.d`; not `::` and `::1`, which are IPv6's own), or
 * behind NAT64's well-known prefix (`64:ff9b::a.b.c.d`, RFC 6052), where every IPv4 client of
 * an IPv6-only server shares one /56. A network-specific NAT64 prefix cannot be told from
 * other IPv6 by its bits.
 */
export function carriesIpv4(groups: IpGroups): boolean {
  if (groups[2] !== 0 || groups[3] !== 0) return false;
  if (groups[0] === 0x64 && groups[1] === 0xff9b) return groups[4] === 0 && groups[5] === 0;
  if (groups[0] !== 0 || groups[1] !== 0) return false;
  const high = groups[4];
  const low = groups[5];
  if (high === 0 && low === 0xffff) return true;
  if (high === 0xffff && low === 0) return true;
  return high === 0 && low === 0 && (groups[6] !== 0 || (groups[7] as number) > 1);
}

export function formatIpv4(groups: IpGroups): string {
  const high = groups[6] as number;
  const low = groups[7] as number;
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/** Keeps the first `prefixLength` bits and clears the rest. */
export function maskGroups(groups: IpGroups, prefixLength: number): IpGroups {
  return groups.map((group, i) => {
    const keep = Math.min(16, Math.max(0, prefixLength - i * 16));
    return keep === 16 ? group : group & ((0xffff << (16 - keep)) & 0xffff);
  });
}

/** RFC 5952 text: lower-case hex, no leading zeros, the longest run of two or more zero groups as `::`. */
export function formatIpv6(groups: IpGroups): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}
