/**
 * fetchRef over real sockets (a server on 127.0.0.1): http(s) only on every hop, redirects
 * followed by hand and capped, the private-address guard on the address actually connected
 * to (literals, `localhost`, a name resolving to private addresses, a redirect from an
 * allowed host to loopback), size caps by Content-Length and by a stream without one, the
 * whole-fetch timeout, credentials kept out of messages. The address classifier unit-tested
 * for public and private addresses alike.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Agent, buildConnector, request } from 'undici';
import sharp from 'sharp';
import {
  addressRefusal,
  createGuardedConnector,
  createRefAgent,
  isPublicAddress,
  type Resolver,
} from '../src/media/inputs/address-guard.ts';
import { fetchRef, redactUrl, type FetchOptions } from '../src/media/inputs/fetch.ts';
import { MediaInputError } from '../src/media/inputs/errors.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface TestServer {
  url: string;
  port: number;
  server: Server;
  /** Requests seen, by path. */
  seen: { path: string; authorization?: string }[];
  connections: number;
  close(): Promise<void>;
}

async function serve(routes: Record<string, Handler>): Promise<TestServer> {
  const t: Partial<TestServer> & { seen: TestServer['seen']; connections: number } = { seen: [], connections: 0 };
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    t.seen.push({ path, authorization: req.headers.authorization });
    const h = routes[path];
    if (h) h(req, res);
    else res.writeHead(404).end('no');
  });
  server.on('connection', () => t.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(t, {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  }) as TestServer;
}

const OPEN: FetchOptions = { allowPrivate: true, timeoutMs: 5_000, maxBytes: 1024 * 1024 };
const GUARDED: FetchOptions = { allowPrivate: false, timeoutMs: 5_000, maxBytes: 1024 * 1024 };

async function refused(p: Promise<unknown>, status: number, code: string, message?: RegExp): Promise<MediaInputError> {
  const err = await p.then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof MediaInputError, `a MediaInputError, got ${String(err)}`);
  assert.equal(err.status, status, err.message);
  assert.equal(err.code, code, err.message);
  if (message) assert.match(err.message, message);
  return err;
}

describe('address classifier', () => {
  test('public addresses are allowed', () => {
    for (const ip of [
      '8.8.8.8',
      '1.1.1.1',
      '172.32.0.1',
      '100.128.0.1',
      '11.0.0.1',
      '192.169.0.1',
      '2001:4860:4860::8888',
      '2001:4860::8888',
      '2606:4700:4700::1111',
      '::ffff:8.8.8.8',
      '[2001:4860::8888]',
    ]) {
      assert.equal(addressRefusal(ip), undefined, ip);
      assert.ok(isPublicAddress(ip), ip);
    }
  });

  test('loopback, private, link-local, CGNAT, ULA, multicast, unspecified and mapped forms are refused', () => {
    const cases: [string, RegExp][] = [
      ['127.0.0.1', /loopback/],
      ['127.255.255.254', /loopback/],
      ['10.1.2.3', /private/],
      ['172.16.0.1', /private/],
      ['172.31.255.255', /private/],
      ['192.168.1.1', /private/],
      ['169.254.169.254', /link-local/],
      ['100.64.0.1', /carrier/],
      ['100.127.255.255', /carrier/],
      ['0.0.0.0', /unspecified/],
      ['0.1.2.3', /unspecified/],
      ['224.0.0.1', /multicast/],
      ['239.255.255.250', /multicast/],
      ['255.255.255.255', /reserved/],
      ['240.0.0.1', /reserved/],
      ['::1', /loopback/],
      ['[::1]', /loopback/],
      ['::', /unspecified/],
      ['fc00::1', /unique-local/],
      ['fd12:3456::1', /unique-local/],
      ['fe80::1', /link-local/],
      ['fe80::1%eth0', /link-local/],
      ['ff02::1', /multicast/],
      ['fec0::1', /site-local/],
      ['::ffff:127.0.0.1', /loopback/],
      ['::ffff:7f00:1', /loopback/],
      ['::ffff:10.0.0.1', /private/],
      ['::ffff:a9fe:a9fe', /link-local/],
      ['0:0:0:0:0:ffff:c0a8:101', /private/],
      ['64:ff9b::a00:1', /private/],
      ['2002:7f00:1::', /loopback/],
      ['::127.0.0.1', /loopback/],
    ];
    for (const [ip, why] of cases) {
      assert.match(addressRefusal(ip) ?? 'allowed', why, ip);
      assert.equal(isPublicAddress(ip), false, ip);
    }
    assert.equal(addressRefusal('localhost'), 'not an IP address');
  });

  test('IPv4-translated forms are read for their IPv4; local-use NAT64 and Teredo are refused outright', () => {
    const cases: [string, RegExp][] = [
      ['::ffff:0:127.0.0.1', /loopback/],
      ['::ffff:0:7f00:1', /loopback/],
      ['::ffff:0:10.0.0.1', /private/],
      ['::ffff:0:a9fe:a9fe', /link-local/],
      ['0:0:0:0:ffff:0:c0a8:101', /private/],
      ['64:ff9b:1::a00:1', /local-use NAT64/],
      ['64:ff9b:1:ffff::808:808', /local-use NAT64/],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /Teredo/],
      ['2001::1', /Teredo/],
    ];
    for (const [ip, why] of cases) assert.match(addressRefusal(ip) ?? 'allowed', why, ip);
    // the public IPv4 inside a translated form stays allowed; other 2001: prefixes are no Teredo
    for (const ip of ['::ffff:0:8.8.8.8', '64:ff9b::808:808', '2001:db9::1', '2001:4860::8888'])
      assert.equal(addressRefusal(ip), undefined, ip);
  });

  test('redactUrl drops userinfo, query and fragment', () => {
    assert.equal(
      redactUrl('http://user:secret@example.com:8080/a/b.png?X-Amz-Signature=abc#f'),
      'http://example.com:8080/a/b.png',
    );
    assert.equal(redactUrl('not a url'), '(an invalid URL)');
    assert.equal(redactUrl('ftp://u:p@host/x'), 'ftp:…');
  });
});

describe('fetchRef', () => {
  let srv: TestServer;
  let png: Buffer;

  before(async () => {
    png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#f00' } })
      .png()
      .toBuffer();
    srv = await serve({
      '/png': (_q, r) => r.writeHead(200, { 'content-type': 'application/octet-stream' }).end(png),
      '/text': (_q, r) => r.writeHead(200, { 'content-type': 'Text/Plain; charset=utf-8' }).end('hello'),
      '/untyped': (_q, r) => r.writeHead(200).end('just bytes'),
      '/empty': (_q, r) => r.writeHead(200, { 'content-length': '0' }).end(),
      '/to-png': (_q, r) => r.writeHead(302, { location: '/png' }).end(),
      '/to-png-303': (_q, r) => r.writeHead(303, { location: 'png' }).end(),
      '/to-png-307': (_q, r) => r.writeHead(307, { location: `${srv.url}/png` }).end(),
      '/to-png-308': (_q, r) => r.writeHead(308, { location: `${srv.url}/to-png` }).end(),
      '/to-png-301': (_q, r) => r.writeHead(301, { location: '/png?x=1' }).end(),
      '/to-ftp': (_q, r) => r.writeHead(302, { location: 'ftp://example.com/a.png' }).end(),
      '/to-file': (_q, r) => r.writeHead(301, { location: 'file:///etc/passwd' }).end(),
      '/no-location': (_q, r) => r.writeHead(302).end(),
      '/loop': (_q, r) => r.writeHead(302, { location: '/loop' }).end(),
      '/to-localhost': (_q, r) => r.writeHead(302, { location: `http://localhost:${srv.port}/png` }).end(),
      '/to-loopback': (_q, r) => r.writeHead(302, { location: `http://127.0.0.1:${srv.port}/png` }).end(),
      '/to-loopback-v6': (_q, r) => r.writeHead(302, { location: `http://[::ffff:127.0.0.1]:${srv.port}/png` }).end(),
      '/gone': (_q, r) => r.writeHead(410).end('gone'),
      '/error': (_q, r) => r.writeHead(500).end('boom'),
      '/not-modified': (_q, r) => r.writeHead(304).end(),
      '/big-declared': (_q, r) => {
        r.writeHead(200, { 'content-length': String(2 * 1024 * 1024) });
        r.write(Buffer.alloc(1024));
      },
      '/big-chunked': (_q, r) => {
        // no Content-Length; keeps sending until the client gives up
        r.writeHead(200, { 'content-type': 'application/octet-stream' });
        const tick = setInterval(() => {
          if (!r.write(Buffer.alloc(64 * 1024, 1))) {
            /* backpressure: keep going on drain */
          }
        }, 1);
        r.on('close', () => clearInterval(tick));
      },
      '/hang': () => {
        /* never answers */
      },
      '/hang-body': (_q, r) => {
        r.writeHead(200, { 'content-length': '1000' });
        r.write('x');
      },
      '/auth': (_q, r) => r.writeHead(200).end(png),
      '/auth-to-other': (_q, r) => r.writeHead(302, { location: `http://localhost:${srv.port}/auth` }).end(),
    });
  });
  after(() => srv.close());

  test('fetches bytes and sniffs the type (the Content-Type is only a fallback)', async () => {
    const file = await fetchRef(`${srv.url}/png`, OPEN, 'images.ref');
    assert.deepEqual(file.bytes, png);
    assert.equal(file.mime, 'image/png');
    assert.deepEqual(await fetchRef(`${srv.url}/text`, OPEN), { bytes: Buffer.from('hello'), mime: 'text/plain' });
    assert.equal((await fetchRef(`${srv.url}/untyped`, OPEN)).mime, 'application/octet-stream');
  });

  test('follows 301/302/303/307/308 to http, with relative and absolute Locations', async () => {
    for (const path of ['/to-png', '/to-png-303', '/to-png-307', '/to-png-308', '/to-png-301']) {
      const file = await fetchRef(`${srv.url}${path}`, OPEN, 'images.ref');
      assert.equal(file.mime, 'image/png', path);
      assert.deepEqual(file.bytes, png, path);
    }
  });

  test('refuses non-http(s) URLs, first hop and redirects alike', async () => {
    await refused(
      fetchRef('ftp://example.com/a.png', OPEN, 'images.a'),
      400,
      'unsupported_url',
      /images\.a is a ftp: URL/,
    );
    await refused(fetchRef('file:///etc/passwd', OPEN, 'images.a'), 400, 'unsupported_url', /file:/);
    await refused(fetchRef('http//nope', OPEN, 'images.a'), 400, 'invalid_media_value', /not a valid URL/);
    const e = await refused(
      fetchRef(`${srv.url}/to-ftp`, OPEN, 'images.a'),
      400,
      'unsupported_url',
      /redirects to a ftp: URL/,
    );
    assert.equal(e.param, 'images.a');
    await refused(fetchRef(`${srv.url}/to-file`, OPEN, 'images.a'), 400, 'unsupported_url', /redirects to a file: URL/);
    await refused(fetchRef(`${srv.url}/no-location`, OPEN, 'images.a'), 400, 'fetch_failed', /302 without a Location/);
  });

  test('too many redirects', async () => {
    await refused(fetchRef(`${srv.url}/loop`, OPEN, 'images.a'), 400, 'too_many_redirects', /more than 5 redirects/);
    const before = srv.seen.filter((s) => s.path === '/to-png-308' || s.path === '/to-png').length;
    // 308 → /to-png → /png is two hops
    await refused(
      fetchRef(`${srv.url}/to-png-308`, { ...OPEN, maxRedirects: 1 }, 'x'),
      400,
      'too_many_redirects',
      /more than 1 redirects/,
    );
    assert.equal(srv.seen.filter((s) => s.path === '/to-png-308' || s.path === '/to-png').length, before + 2);
    assert.equal((await fetchRef(`${srv.url}/to-png-308`, { ...OPEN, maxRedirects: 2 })).mime, 'image/png');
  });

  test('non-2xx answers are a 400 naming the param and the status', async () => {
    await refused(
      fetchRef(`${srv.url}/gone`, OPEN, 'files.audio'),
      400,
      'fetch_failed',
      /^could not fetch files\.audio: the server answered 410/,
    );
    await refused(fetchRef(`${srv.url}/error`, OPEN, 'files.audio'), 400, 'fetch_failed', /answered 500/);
    await refused(fetchRef(`${srv.url}/not-modified`, OPEN, 'files.audio'), 400, 'fetch_failed', /answered 304/);
    await refused(fetchRef(`${srv.url}/empty`, OPEN, 'files.audio'), 400, 'fetch_failed', /empty file/);
    // nothing listens on port 1
    await refused(fetchRef('http://127.0.0.1:1/x', OPEN, 'files.audio'), 400, 'fetch_failed', /connection was refused/);
  });

  test('allowPrivate false: loopback literals are refused without connecting', async () => {
    const conns = srv.connections;
    for (const url of [
      `${srv.url}/png`,
      `http://[::1]:${srv.port}/png`,
      `http://[::ffff:127.0.0.1]:${srv.port}/png`,
      `http://[::ffff:0:127.0.0.1]:${srv.port}/png`,
      `http://[64:ff9b:1::7f00:1]:${srv.port}/png`,
      `http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]:${srv.port}/png`,
      `http://0x7f.0.0.1:${srv.port}/png`,
      `http://2130706433:${srv.port}/png`,
      `http://0.0.0.0:${srv.port}/png`,
    ]) {
      await refused(
        fetchRef(url, GUARDED, 'images.ref'),
        400,
        'private_address',
        /could not fetch images\.ref: .*ref_url_allow_private/,
      );
    }
    assert.equal(srv.connections, conns);
  });

  test('allowPrivate false: a host name resolving to loopback (localhost) is refused before connecting', async () => {
    const conns = srv.connections;
    const e = await refused(
      fetchRef(`http://localhost:${srv.port}/png`, GUARDED, 'images.ref'),
      400,
      'private_address',
      /localhost resolves only to a loopback address/,
    );
    assert.equal(e.param, 'images.ref');
    assert.equal(srv.connections, conns);
  });

  test('allowPrivate false: a name resolving only to private addresses (DNS rebinding) is refused before connecting', async () => {
    const seenHosts: string[] = [];
    const resolve: Resolver = (hostname, _o, cb) => {
      seenHosts.push(hostname);
      cb(null, [
        { address: '10.0.0.7', family: 4 },
        { address: '127.0.0.1', family: 4 },
        { address: 'fd00::1', family: 6 },
      ]);
    };
    const dispatcher = createRefAgent({ allowPrivate: false, resolve });
    const conns = srv.connections;
    await refused(
      fetchRef(`http://rebind.test:${srv.port}/png`, { ...GUARDED, dispatcher }, 'images.ref'),
      400,
      'private_address',
      /rebind\.test resolves only to a private address/,
    );
    assert.deepEqual(seenHosts, ['rebind.test']);
    assert.equal(srv.connections, conns);
    await dispatcher.close();
  });

  test('allowPrivate false: of mixed records only the public ones are connected to', async () => {
    // 203.0.113.9 (TEST-NET-3) is public for the guard and unreachable here: the fetch fails or times out, never reaching loopback
    const resolve: Resolver = (_h, _o, cb) =>
      cb(null, [
        { address: '127.0.0.1', family: 4 },
        { address: '203.0.113.9', family: 4 },
      ]);
    const dispatcher = createRefAgent({ allowPrivate: false, resolve });
    const conns = srv.connections;
    const err = await fetchRef(
      `http://mixed.test:${srv.port}/png`,
      { ...GUARDED, dispatcher, timeoutMs: 300 },
      'images.ref',
    ).then(
      () => assert.fail('expected a failure'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof MediaInputError);
    assert.ok(err.code === 'fetch_timeout' || err.code === 'fetch_failed', err.message);
    assert.equal(srv.connections, conns);
    await dispatcher.destroy();
  });

  test('the guarded connector refuses literals on its own (a dispatcher used without fetchRef)', async () => {
    const dispatcher = new Agent({ connect: createGuardedConnector() });
    const conns = srv.connections;
    await assert.rejects(request(`${srv.url}/png`, { dispatcher }), /127\.0\.0\.1 is a loopback address/);
    assert.equal(srv.connections, conns);
    await dispatcher.close();
  });

  test('allowPrivate false: a redirect from an allowed host to loopback is refused', async () => {
    // "public.test" stands for a public host: this test agent connects it to the local server
    // without the guard, and every other host through the guard, as the real agent would
    const guarded = createGuardedConnector();
    const plain = buildConnector({});
    const dispatcher = new Agent({
      connect: (o, cb) => (o.hostname === 'public.test' ? plain({ ...o, hostname: '127.0.0.1' }, cb) : guarded(o, cb)),
    });
    const opts = { ...GUARDED, dispatcher };
    const pub = `http://public.test:${srv.port}`;
    assert.equal((await fetchRef(`${pub}/png`, opts)).mime, 'image/png'); // the allowed host itself is fine
    const seen = srv.seen.length;
    await refused(
      fetchRef(`${pub}/to-loopback`, opts, 'images.ref'),
      400,
      'private_address',
      /127\.0\.0\.1 is a loopback address/,
    );
    await refused(fetchRef(`${pub}/to-loopback-v6`, opts, 'images.ref'), 400, 'private_address', /loopback/);
    await refused(
      fetchRef(`${pub}/to-localhost`, opts, 'images.ref'),
      400,
      'private_address',
      /localhost resolves only to a loopback/,
    );
    // only the three redirecting requests reached the server, never /png
    assert.deepEqual(
      srv.seen.slice(seen).map((s) => s.path),
      ['/to-loopback', '/to-loopback-v6', '/to-localhost'],
    );
    await dispatcher.close();
  });

  test('allowPrivate true: the same redirects are followed', async () => {
    assert.equal((await fetchRef(`${srv.url}/to-localhost`, OPEN)).mime, 'image/png');
    assert.equal((await fetchRef(`${srv.url}/to-loopback`, OPEN)).mime, 'image/png');
  });

  test('size: refused by Content-Length before reading', async () => {
    const t0 = performance.now();
    const e = await refused(
      fetchRef(`${srv.url}/big-declared`, OPEN, 'files.video'),
      413,
      'file_too_large',
      /files\.video is larger than the 1 MiB/,
    );
    assert.equal(e.param, 'files.video');
    assert.ok(performance.now() - t0 < 2_000);
  });

  test('size: a stream without Content-Length is cut once past the cap and the connection closed', async () => {
    let closed = false;
    const server = await serve({
      '/stream': (_q, r) => {
        r.writeHead(200);
        const tick = setInterval(() => r.write(Buffer.alloc(16 * 1024, 7)), 1);
        r.on('close', () => {
          clearInterval(tick);
          closed = true;
        });
      },
    });
    try {
      await refused(
        fetchRef(`${server.url}/stream`, { ...OPEN, maxBytes: 200 * 1024 }, 'files.x'),
        413,
        'file_too_large',
        /200 KiB/,
      );
      for (let i = 0; i < 100 && !closed; i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(closed, 'the server saw the connection end');
    } finally {
      await server.close();
    }
  });

  test('timeout: a server that never answers, and one that stalls mid-body', async () => {
    let t0 = performance.now();
    await refused(
      fetchRef(`${srv.url}/hang`, { ...OPEN, timeoutMs: 300 }, 'images.ref'),
      400,
      'fetch_timeout',
      /^could not fetch images\.ref: timed out after 0\.3 s/,
    );
    assert.ok(performance.now() - t0 < 1_500, 'stopped at the timeout');
    t0 = performance.now();
    await refused(
      fetchRef(`${srv.url}/hang-body`, { ...OPEN, timeoutMs: 300 }, 'images.ref'),
      400,
      'fetch_timeout',
      /timed out after 0\.3 s/,
    );
    assert.ok(performance.now() - t0 < 1_500, 'stopped at the timeout');
  });

  test('a caller abort stops the fetch with its reason', async () => {
    const ac = new AbortController();
    const p = fetchRef(`${srv.url}/hang`, { ...OPEN, signal: ac.signal });
    setTimeout(() => ac.abort(new Error('client left')), 50);
    await assert.rejects(p, /client left/);
  });

  test('URL credentials: sent as Basic auth to their own origin only, never echoed', async () => {
    const url = `http://user:s3cret@127.0.0.1:${srv.port}`;
    const seen = srv.seen.length;
    await fetchRef(`${url}/auth`, OPEN);
    assert.equal(srv.seen[seen].authorization, `Basic ${Buffer.from('user:s3cret').toString('base64')}`);
    // 127.0.0.1 → localhost is another origin: no credentials there
    await fetchRef(`${url}/auth-to-other`, OPEN);
    assert.deepEqual(
      srv.seen.slice(seen + 1).map((s) => [s.path, s.authorization]),
      [
        ['/auth-to-other', srv.seen[seen].authorization],
        ['/auth', undefined],
      ],
    );
    for (const attempt of [
      () => fetchRef(`${url}/gone?token=abc`, OPEN),
      () => fetchRef(`${url}/hang`, { ...OPEN, timeoutMs: 100 }),
      () => fetchRef(`${url}/png`, GUARDED),
      () => fetchRef(`http://user:s3cret@127.0.0.1:1/x`, OPEN),
    ]) {
      const err = await attempt().then(
        () => assert.fail('expected a refusal'),
        (e: Error) => e,
      );
      assert.doesNotMatch(err.message, /s3cret|user:|token=/);
      assert.match(err.message, /http:\/\/127\.0\.0\.1:\d+\//);
    }
  });
});
