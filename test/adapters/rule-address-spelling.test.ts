import { parseRules } from '@sluice/rules';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from './harness/index.js';
import { clockAt, collectingLogger } from './helpers.js';

/** Rules that block each of `addresses` (`requests_per_unit: 0`), as an Envoy file bans a client. */
const banning = (...addresses: string[]) =>
  parseRules(`
domain: api
descriptors:
${addresses.map((address) => `  - key: remote_address\n    value: "${address}"\n    rate_limit: { unit: minute, requests_per_unit: 0 }`).join('\n')}
`);

// Regression: requests send `remote_address` as the client's key (IPv6 as its /56 network,
// canonical; an IPv4 address IPv6 carries as that IPv4 address), where Envoy sends the address
// as it is. A rule for one IPv6 client carried over from Envoy's files never matched, and its
// ban let that client through without a word.
describe.each(harnesses)('$name: a rule whose remote_address value no request can send', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());

  it('warns once per value at start-up, naming the spelling to write; such a rule indeed never matches', async () => {
    const logger = collectingLogger();
    const rules = banning('::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '2001:db8::/56', '192.0.2.*', '192.0.2.7');
    app = await harness.start({ limits: [{ rules, clock: clockAt(0), logger }] });
    expect(logger.codes()).toEqual([
      'WRN_SLUICE_RULE_ADDRESS_SPELLING',
      'WRN_SLUICE_RULE_ADDRESS_SPELLING',
      'WRN_SLUICE_RULE_ADDRESS_SPELLING',
    ]);
    const [loopback, spelledOut, mapped] = logger.messages;
    expect(loopback).toContain('"::1" can never match');
    expect(loopback).toContain('"::/56" for this one. Write that to limit its /56 network');
    expect(loopback).toContain('`ipv6Subnet: false`');
    expect(spelledOut).toContain('"0:0:0:0:0:0:0:1" can never match');
    expect(mapped).toContain('"::ffff:127.0.0.1" can never match');
    expect(mapped).toContain('"127.0.0.1" for this one. Write that.');
    // The test client connects over IPv4 loopback: the mapped spelling of its address bans nothing.
    await request(app.url).get('/').expect(200);
    expect(logger.messages).toHaveLength(3);
  });

  // A network is written as the middleware sends it, and a wildcard matches keys in lower case
  // without `::ffff:`: written otherwise, they too matched nothing and said nothing.
  it('warns of networks and wildcards no request can send, naming what to write', async () => {
    const logger = collectingLogger();
    const rules = banning(
      '2001:DB8::/56',
      '2001:db8::/64',
      '2001:db8:0:ff::/56',
      '127.0.0.0/8',
      '::ffff:127.0.0.*',
      '2001:DB8:*',
      '2001:db8:*',
      '2001:db8:ab00::/56',
    );
    app = await harness.start({ limits: [{ rules, clock: clockAt(0), logger }] });
    const said = [
      ['"2001:DB8::/56"', 'Write that', '"2001:db8::/56"'],
      ['"2001:db8::/64"', 'its /56 network', '"2001:db8::/56"'],
      ['"2001:db8:0:ff::/56"', 'Write that', '"2001:db8::/56"'],
      ['"127.0.0.0/8"', 'as a trailing `*` wildcard', '"127.*"'],
      ['"::ffff:127.0.0.*"', 'write the wildcard without `::ffff:`'],
      ['"2001:DB8:*"', 'in lower case', '"2001:db8:*"'],
    ];
    expect(logger.messages).toHaveLength(said.length);
    said.forEach((parts, i) => {
      for (const part of parts) expect(logger.messages[i]).toContain(part);
    });
  });

  it('matches the value written as the warning says', async () => {
    const logger = collectingLogger();
    app = await harness.start({ limits: [{ rules: banning('127.0.0.1'), clock: clockAt(0), logger }] });
    await request(app.url).get('/').expect(429);
    expect(logger.messages).toEqual([]);
  });

  it('takes whole IPv6 addresses under `ipv6Subnet: false`, still in canonical form', async () => {
    const logger = collectingLogger();
    const rules = banning('::1', '0:0:0:0:0:0:0:1');
    app = await harness.start({ limits: [{ rules, ipv6Subnet: false, clock: clockAt(0), logger }] });
    expect(logger.codes()).toEqual(['WRN_SLUICE_RULE_ADDRESS_SPELLING']);
    expect(logger.messages[0]).toContain('"0:0:0:0:0:0:0:1" can never match');
    expect(logger.messages[0]).toContain('"::1" for this one. Write that.');
  });

  it("checks a watcher's rule set again after each reload, and says nothing of an app's own field", async () => {
    const logger = collectingLogger();
    const watcher = { current: banning('192.0.2.7') };
    app = await harness.start({ limits: [{ rules: watcher, clock: clockAt(0), logger }] });
    watcher.current = banning('::ffff:192.0.2.7');
    await request(app.url).get('/').expect(200);
    expect(logger.codes()).toEqual(['WRN_SLUICE_RULE_ADDRESS_SPELLING']);
    await app.close();
    const quiet = collectingLogger();
    const fields = { remote_address: () => '::1' };
    app = await harness.start({ limits: [{ rules: banning('::1'), fields, clock: clockAt(0), logger: quiet }] });
    await request(app.url).get('/').expect(429);
    expect(quiet.messages).toEqual([]);
  });
});
