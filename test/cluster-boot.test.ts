/**
 * Cluster mode at boot: an unreachable Redis is a clear error naming `cluster.redis_url` (and
 * never its password), the store lock is let go; a reachable one makes the instance a member.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { startGateway } from './helpers/gateway.ts';
import { freePort, startRedis, type RedisServer } from './helpers/redis-server.ts';
import { GatewayLock } from '../src/store/backup/lock.ts';
import { validateConfig } from '../src/config/schema.ts';
import { tempDirs } from './helpers/temp-dirs.ts';

const dirs = tempDirs('gw-cluster-boot-');

describe('cluster: boot', () => {
  let redis: RedisServer;
  before(async () => (redis = await startRedis()));
  after(() => redis.stop());

  it('refuses to start when Redis does not answer, naming cluster.redis_url but not its password', async () => {
    const port = await freePort();
    const storeDir = dirs();
    await assert.rejects(
      startGateway([], { cluster: { redis_url: `redis://:s3cret-pw@127.0.0.1:${port}` } }, { storeDir }),
      (err: Error) => {
        assert.match(err.message, /cluster\.redis_url/);
        assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
        assert.doesNotMatch(err.message, /s3cret-pw/);
        return true;
      },
    );
    assert.equal(GatewayLock.liveHolder(storeDir), undefined, 'the store lock is let go');
  });

  it('joins the cluster: its heartbeat names it alive, and closing takes it out', async () => {
    const gw = await startGateway([], { cluster: { redis_url: redis.url, instance_id: 'boot-a' } });
    const probe = new Redis(redis.url);
    try {
      const alive = await probe.zrangebyscore('llmgw:alive', Date.now(), '+inf');
      assert.deepEqual(alive, ['boot-a']);
      await gw.close();
      assert.deepEqual(await probe.zrangebyscore('llmgw:alive', Date.now(), '+inf'), []);
    } finally {
      probe.disconnect();
    }
  });

  it('validates the cluster block: URL schemes and instance names', () => {
    const bad = validateConfig({ cluster: { redis_url: 'http://x', instance_id: 'a b' } });
    assert.equal(bad.ok, false);
    const paths = bad.ok ? [] : bad.problems.map((p) => p.path);
    assert.ok(paths.includes('cluster.redis_url'), paths.join());
    assert.ok(paths.includes('cluster.instance_id'), paths.join());
    assert.equal(validateConfig({ cluster: { redis_url: 'redis://127.0.0.1:6379' } }).ok, true);
  });
});
