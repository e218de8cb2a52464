import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Pool } from 'pg';

import { DatabaseError, DatabaseUnreachableError } from '../../../lib/errors';
import { inTransaction, withClient } from '../../../lib/store/postgres/runner';

/**
 * How the runner gives a connection back. A stand-in for pg's pool records what happened to the
 * one connection it hands out; the statements behind it are scripted per text. (The runner on a
 * real Postgres is exercised by every integration test.)
 */
function scriptedPool(answers: Record<string, () => unknown>) {
	const sent: string[] = [];
	const listeners = new Set<(...args: unknown[]) => void>();
	let released: { closed: boolean; with: unknown } | undefined;
	const client = {
		async query(config: string | { text: string }) {
			const text = typeof config === 'string' ? config : config.text;
			sent.push(text);
			const answer = answers[text];
			return answer ? answer() : { rows: [], rowCount: 0 };
		},
		on: (_event: string, listener: (...args: unknown[]) => void) => listeners.add(listener),
		removeListener: (_event: string, listener: (...args: unknown[]) => void) => listeners.delete(listener),
		release: (closeWith?: unknown) => {
			released = { closed: Boolean(closeWith), with: closeWith };
		},
	};
	const pool = { connect: async () => client } as unknown as Pool;
	return { pool, sent, listenerCount: () => listeners.size, released: () => released };
}

const fail = (error: Error) => () => {
	throw error;
};
const sqlError = (code: string) => Object.assign(new Error(`error ${code}`), { code });

describe('withClient', () => {
	it('pools the connection after work that succeeded, its error listener removed', async () => {
		const { pool, released, listenerCount } = scriptedPool({});
		expect(await withClient(pool, async ({ runner }) => (await runner.run('select 1', [])).rowCount)).toBe(0);
		expect(released()).toEqual({ closed: false, with: false });
		expect(listenerCount()).toBe(0);
	});

	it('closes a connection that broke, and keeps its listener for the late error events of a dying socket', async () => {
		const lost = Object.assign(new Error('Connection terminated unexpectedly'), {});
		const { pool, released, listenerCount } = scriptedPool({ 'select 1': fail(lost) });
		await expect(withClient(pool, ({ runner }) => runner.run('select 1', []))).rejects.toBeInstanceOf(DatabaseUnreachableError);
		expect(released()).toEqual({ closed: true, with: lost });
		expect(listenerCount()).toBe(1);
	});

	it('closes a connection its user marked not reusable, even after success', async () => {
		const { pool, released } = scriptedPool({});
		await withClient(pool, async (session) => {
			session.reusable = false;
		});
		expect(released()?.closed).toBe(true);
	});
});

describe('inTransaction', () => {
	it('commits when the work succeeds', async () => {
		const { pool, sent, released } = scriptedPool({});
		await inTransaction(pool, (runner) => runner.run('select 1', []));
		expect(sent).toEqual(['begin', 'select 1', 'commit']);
		expect(released()?.closed).toBe(false);
	});

	it('rolls back after a statement Postgres refused, and pools the connection', async () => {
		const { pool, sent, released } = scriptedPool({ 'create table t ()': fail(sqlError('42501')) });
		await expect(inTransaction(pool, (runner) => runner.run('create table t ()', []))).rejects.toBeInstanceOf(Error);
		expect(sent).toEqual(['begin', 'create table t ()', 'rollback']);
		expect(released()?.closed).toBe(false);
	});

	it('closes the connection when the rollback itself failed: it may still hold the open transaction', async () => {
		const { pool, sent, released } = scriptedPool({ 'create table t ()': fail(sqlError('42P07')), rollback: fail(sqlError('XX000')) });
		await expect(inTransaction(pool, (runner) => runner.run('create table t ()', []))).rejects.toBeInstanceOf(DatabaseError);
		expect(sent).toEqual(['begin', 'create table t ()', 'rollback']);
		expect(released()?.closed).toBe(true);
	});

	it('closes a broken connection without a rollback (closing it rolls back)', async () => {
		const lost = new Error('Connection terminated unexpectedly');
		const { pool, sent, released } = scriptedPool({ 'create table t ()': fail(lost) });
		await expect(inTransaction(pool, (runner) => runner.run('create table t ()', []))).rejects.toBeInstanceOf(DatabaseUnreachableError);
		expect(sent).toEqual(['begin', 'create table t ()']);
		expect(released()).toEqual({ closed: true, with: lost });
	});
});

describe('the one runner', () => {
	const LIB = path.join(__dirname, '..', '..', '..', 'lib');
	const sources = (readdirSync(LIB, { recursive: true }) as string[]).filter((file) => file.endsWith('.ts'));

	it('is the only module that checks out or opens a connection, or sends a statement on a pool', () => {
		const elsewhere = sources
			.filter((file) => file !== path.join('store', 'postgres', 'runner.ts'))
			.flatMap((file) =>
				readFileSync(path.join(LIB, file), 'utf8')
					.split('\n')
					.filter((line) => /\.connect\(|new Client\(|\bpool\.query\(/i.test(line))
					.map((line) => `${file}: ${line.trim()}`),
			);
		expect(elsewhere).toEqual([]);
	});
});
