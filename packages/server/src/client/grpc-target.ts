import { isIPv4, isIPv6 } from 'node:net';

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
      return isHostPort(target, isNameOrAddress);
    case 'dns':
      return isHostPort(withoutAuthority(rest as string), isNameOrAddress);
    // Addresses only, of the scheme's family: grpc-js resolves no name here, so `ipv4:localhost`
    // or `ipv6:127.0.0.1` failed every call. An IPv6 one in brackets: bare, `ipv6:::1:8081`
    // would be read as the address ::1:8081 on port 443.
    case 'ipv4':
      return withoutAuthority(rest as string)
        .split(',')
        .every((entry) => isHostPort(entry, isIPv4, false));
    case 'ipv6':
      return withoutAuthority(rest as string)
        .split(',')
        .every((entry) => isHostPort(entry, () => false));
    default:
      return (rest as string) !== '' && rest !== '//';
  }
}

/** A URI's path, past an authority (`//authority/`) if it has one. */
const withoutAuthority = (rest: string): string => rest.replace(/^\/\/[^/]*\//, '');

const HOST_PORT = /^(?:\[([^\]]+)\]|([\w.-]+))(?::(\d{1,5}))?$/;
const isNameOrAddress = (host: string): boolean => /^[\w.-]+$/.test(host);

/**
 * `host:port` with the port from 1 to 65535 or left out: a bracketed host (where `brackets`
 * allows one) must be an IPv6 address (a zone id as Node reads one), any other what `isHost`
 * takes.
 */
function isHostPort(text: string, isHost: (host: string) => boolean, brackets = true): boolean {
  const match = HOST_PORT.exec(text);
  if (match === null) return false;
  const [, bracketed, host, port] = match;
  const hostOk = bracketed === undefined ? isHost(host as string) : brackets && isIPv6(bracketed);
  return hostOk && (port === undefined || (Number(port) >= 1 && Number(port) <= 65535));
}
