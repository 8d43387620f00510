import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { harnesses, type RunningApp } from './harness/index.js';
import { clockAt, collectingLogger } from './helpers.js';

/**
 * With the default key, an `allowList` entry is compared with the client key as sluice derives
 * it: IPv4-mapped IPv6 as IPv4, other IPv6 as its masked subnet. An entry copied from a log of a
 * dual-stack server (`::ffff:127.0.0.1`), the IPv6 loopback `::1` or any full IPv6 address
 * could never equal a key: the client it names was counted and refused as any other, and
 * nothing said so. Such an entry is now refused at start-up, naming the key to list instead.
 */
describe.each(harnesses)('$name: an allowList entry that is an address but not a client key', (harness) => {
  let app: RunningApp | undefined;
  afterEach(() => app?.close());
  const oneEach = { algorithm: 'fixed-window', limit: 1, window: '1m', clock: clockAt(0), logger: collectingLogger() };

  it.each([
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::1', '::/56'],
    ['2001:db8::1', '2001:db8::/56'],
    ['[2001:db8::1]:443', '2001:db8::/56'],
    ['10.0.0.5:8080', '10.0.0.5'],
  ])('refuses %s at start-up, naming its key %s', async (entry, key) => {
    await expect(harness.configure({ ...oneEach, allowList: ['10.0.0.9', entry] })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
      message: expect.stringContaining(
        `\`allowList\` entry ${JSON.stringify(entry)} is keyed as ${JSON.stringify(key)}`,
      ),
    });
  });

  it.each([
    ['127.0.0.0/8', ''],
    ['1.2.3.4/32', ''],
    ['2001:DB8::/56', '2001:db8::/56'],
    ['2001:db8::/48', '2001:db8::/56'],
    ['::1/128', '::/56'],
  ])('refuses the range %s at start-up: no client key equals it', async (entry, key) => {
    await expect(harness.configure({ ...oneEach, allowList: [entry] })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
      message: expect.stringContaining(`entry ${JSON.stringify(entry)} is a range${key === '' ? ',' : ''}`),
    });
    if (key !== '') {
      await expect(harness.configure({ ...oneEach, allowList: [entry] })).rejects.toMatchObject({
        message: expect.stringContaining(`keyed as ${JSON.stringify(key)}`),
      });
    }
  });

  it('names the key under the ipv6Subnet in force', async () => {
    await expect(harness.configure({ ...oneEach, ipv6Subnet: 64, allowList: ['2001:db8::1'] })).rejects.toMatchObject({
      message: expect.stringContaining('is keyed as "2001:db8::/64"'),
    });
  });

  it('lets a client listed by its key through uncounted, and keeps other entries as given', async () => {
    app = await harness.start({ limits: [{ ...oneEach, allowList: ['127.0.0.1', '::/56', 'partner'] }] });
    for (let i = 0; i < 3; i++) await request(app.url).get('/').expect(200);
  });

  it('refuses unknown-ip, the key of a request whose client closed its connection early too (any client could pass so)', async () => {
    await expect(harness.configure({ ...oneEach, allowList: ['127.0.0.1', 'unknown-ip'] })).rejects.toMatchObject({
      code: 'ERR_SLUICE_INVALID_OPTION',
      message: expect.stringContaining('"unknown-ip" would let any client past its limit'),
    });
  });

  it('takes any entry with a key function, whose keys sluice does not derive', async () => {
    app = await harness.start({ limits: [{ ...oneEach, key: () => '::1', allowList: ['::1'] }] });
    for (let i = 0; i < 3; i++) await request(app.url).get('/').expect(200);
  });
});
