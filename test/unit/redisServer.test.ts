// The test command's Redis bootstrap (test/support/stack/redisServer.ts): queue mode's redis-server is
// found, installed with apt, or named as the one command to type — decided before anything runs.
import * as redis from '../support/stack/redisServer';

type Facts = { found: string | null; isRoot: boolean; hasApt: boolean; hasSudo: boolean };
const machine = (facts: Partial<Facts>): Facts => ({ found: null, isRoot: false, hasApt: false, hasSudo: false, ...facts });

describe('redisServerPlan', () => {
	it('uses a redis-server that is there, whoever runs it', () => {
		for (const isRoot of [true, false]) {
			expect(redis.redisServerPlan(machine({ found: '/usr/bin/redis-server', isRoot, hasApt: true }))).toEqual({
				action: 'use',
				bin: '/usr/bin/redis-server',
			});
		}
	});

	it('installs with apt when it runs as root and apt is there (as CI does)', () => {
		expect(redis.redisServerPlan(machine({ isRoot: true, hasApt: true }))).toEqual({ action: 'install' });
	});

	it.each([
		['not root, apt and sudo', machine({ hasApt: true, hasSudo: true }), 'sudo apt-get update && sudo apt-get install -y redis-server'],
		['not root, apt, no sudo', machine({ hasApt: true }), 'apt-get update && apt-get install -y redis-server   (as root)'],
		['root without apt', machine({ isRoot: true }), 'REDIS_SERVER_BIN=/path/to/redis-server npm run test:all'],
		['no apt, not root', machine({}), 'REDIS_SERVER_BIN=/path/to/redis-server npm run test:all'],
	])('stops with the one command to type: %s', (_name, facts, command) => {
		const plan = redis.redisServerPlan(facts);
		expect(plan.action).toBe('stop');
		const message = plan.action === 'stop' ? plan.message : '';
		expect(message).toContain(`\n    ${command}`);
		expect(message).toContain('E2E_TOPOLOGIES=single npm run test:all');
	});
});

describe('ensureRedisServer', () => {
	it('installs once as root with apt and then uses what was installed', () => {
		const seen: Array<string | null> = [null, '/usr/bin/redis-server'];
		const install = jest.fn(() => null);
		const result = redis.ensureRedisServer({ facts: () => machine({ found: seen.shift() ?? null, isRoot: true, hasApt: true }), install });
		expect(install).toHaveBeenCalledTimes(1);
		expect(result).toEqual({ ok: true, bin: '/usr/bin/redis-server' });
	});

	it('does not install when redis-server is there', () => {
		const install = jest.fn(() => null);
		const result = redis.ensureRedisServer({
			facts: () => machine({ found: '/usr/local/bin/redis-server', isRoot: true, hasApt: true }),
			install,
		});
		expect(install).not.toHaveBeenCalled();
		expect(result).toEqual({ ok: true, bin: '/usr/local/bin/redis-server' });
	});

	it('reports a failed apt install with its output and the command to type, without throwing', () => {
		const result = redis.ensureRedisServer({
			facts: () => machine({ isRoot: true, hasApt: true }),
			install: () =>
				'apt-get install -y -qq --no-install-recommends redis-server failed (exit 100):\nE: Unable to locate package redis-server',
		});
		expect(result.ok).toBe(false);
		const message = result.ok ? '' : result.message;
		expect(message).toContain('Unable to locate package redis-server');
		expect(message).toContain('apt-get update && apt-get install -y redis-server');
	});

	it('does not try to install when it cannot (not root): it names the command instead', () => {
		const install = jest.fn(() => null);
		const result = redis.ensureRedisServer({ facts: () => machine({ hasApt: true, hasSudo: true }), install });
		expect(install).not.toHaveBeenCalled();
		expect(result.ok).toBe(false);
		expect(result.ok ? '' : result.message).toContain('sudo apt-get install -y redis-server');
	});
});
