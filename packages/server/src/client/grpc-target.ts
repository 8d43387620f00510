/**
 * Whether `target` is an address grpc-js can reach, in its own syntax: `host:port` (a name, an
 * IPv4 address or a bracketed IPv6 one; the port from 1 to 65535, 443 when left out), that
 * after `dns:` (with `//authority/` or not), a list after `ipv4:` or `ipv6:`, or a path after
 * `unix:` or `unix-abstract:`. grpc-js takes any string and reads one it does not know as a DNS
 * name, so a typo (`grpc://…`, a trailing space, port 99999) only failed every call, on name
 * resolution, and a limiter failing open let every request through.
 */
export function isGrpcTarget(target: string): boolean {
  if (/\s/.test(target)) return false;
  const [, scheme, rest] = /^(dns|ipv4|ipv6|unix|unix-abstract):(.*)$/.exec(target) ?? [undefined, undefined, target];
  switch (scheme) {
    case undefined:
      return isHostPort(target);
    case 'dns':
      return isHostPort((rest as string).replace(/^\/\/[^/]*\//, ''));
    case 'ipv4':
    case 'ipv6':
      return (rest as string).split(',').every(isHostPort);
    default:
      return (rest as string) !== '' && rest !== '//';
  }
}

const HOST_PORT = /^(?:\[[0-9A-Fa-f:.]+(?:%[\w.-]+)?\]|[\w.-]+)(?::(\d{1,5}))?$/;

function isHostPort(text: string): boolean {
  const match = HOST_PORT.exec(text);
  if (match === null) return false;
  const port = match[1];
  return port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
}
