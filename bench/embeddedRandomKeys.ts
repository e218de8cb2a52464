#!/usr/bin/env node
// The Embedded store's largest calls on keys as providers send them (random ids, not the ordered ones
// bench/embedded.ts makes): each call's time and the longest it kept this process's event loop from
// running anything else (what n8n would feel), without the time the thread waited for a CPU.
// Random keys are the hard case: every key lands on another page of the key's index, so a 10,000-key
// reservation or a 1,000-row cleanup chunk touches thousands of pages of a large table.
//
//   "$(node -r ./test/support/register-ts.js test/support/stack/sqliteNode)" -r ./test/support/register-ts.js bench/embeddedRandomKeys.ts \
//     [--quick] [--table N] [--calls N] [--cleanup-rows N] [--json FILE]
//
// (a Node with node:sqlite: test/support/stack/sqliteNode.ts prints one, installing it when needed)
//
// 1. Reserve: a table of --table random keys (default 200,000), then --calls reservations of 10,000
//    items (1,000 repeats) of new random keys, and a Mark Complete of each batch's keys.
// 2. Delete Expired Keys on --cleanup-rows expired random keys (default 200,000; and a tenth as many
//    live ones), seeded by another process while this one has the file open (as in n8n).
// Runs the built package (dist/).
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { KeyStore } from '../lib/store/contract';
import type { ReservationRequest, ReserveOptions } from '../lib/types';
import { stallProbe } from './stallProbe';

const ROOT = path.join(__dirname, '..');
const TARGET_STALL_MS = 50;

/** One call's figures, as BENCHMARKS.md's table reads them (bench/report.ts). */
export interface RandomKeysRow {
	call: string;
	medianMs: number;
	maxMs: number;
	/** The longest event-loop stall of any run of the call, and the same without the time the thread waited for a CPU. */
	stallMs: number;
	ownStallMs: number;
	rowsPerS?: number;
}

interface Args {
	quick: boolean;
	table: number;
	calls: number;
	cleanupRows: number;
	json?: string;
	seed?: { file: string; expired: number; live: number };
}

function parseArgs(argv: string[]): Args {
	const args: Partial<Args> = { quick: false };
	for (let i = 0; i < argv.length; i++) {
		const arg = argv[i];
		const next = () => Number(argv[++i]);
		if (arg === '--quick') args.quick = true;
		else if (arg === '--table') args.table = next();
		else if (arg === '--calls') args.calls = next();
		else if (arg === '--cleanup-rows') args.cleanupRows = next();
		else if (arg === '--json') args.json = path.resolve(argv[++i]);
		else if (arg === '--seed') args.seed = { file: argv[++i], expired: next(), live: next() };
		else throw new Error(`unknown argument ${arg} (see the comment at the top of bench/embeddedRandomKeys.ts)`);
	}
	return {
		quick: Boolean(args.quick),
		table: args.table ?? (args.quick ? 20_000 : 200_000),
		calls: args.calls ?? (args.quick ? 2 : 10),
		cleanupRows: args.cleanupRows ?? (args.quick ? 20_000 : 200_000),
		json: args.json,
		seed: args.seed,
	};
}

interface EmbeddedModule {
	openEmbeddedKeyStore(options: { file: string; createTable?: boolean }): KeyStore;
	closeEmbeddedStores(): void;
}

function built(): EmbeddedModule {
	const file = path.join(ROOT, 'dist', 'lib', 'store', 'embedded', 'index.js');
	if (!fs.existsSync(file)) throw new Error('dist/lib/store/embedded/index.js is missing: run npm run build first');
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	return require(file) as EmbeddedModule;
}

async function measured<T>(work: () => Promise<T>): Promise<{ result: T; ms: number; stallMs: number; ownStallMs: number }> {
	const stop = stallProbe();
	const started = performance.now();
	try {
		const result = await work();
		const ms = performance.now() - started;
		return { result, ms, ...stop() };
	} catch (error) {
		stop();
		throw error;
	}
}

const PERMANENT: ReserveOptions = {
	mode: 'permanent',
	leaseSeconds: 300,
	retentionSeconds: 30 * 24 * 3600,
	executionId: 'bench',
	workflowId: 'bench',
	instanceId: 'bench',
};
const randomKey = () => `evt_${randomUUID()}`;
const request = (key: string): ReservationRequest => ({ key, keySource: 'header', payloadHash: null });

/** `items` requests of new random keys, the last tenth repeating keys from the start. */
function batch(items: number): ReservationRequest[] {
	const repeats = Math.floor(items / 10);
	const keys = Array.from({ length: items - repeats }, randomKey);
	return [...keys, ...keys.slice(0, repeats)].map(request);
}

async function fill(store: KeyStore, count: number, retentionSeconds: number): Promise<void> {
	for (let done = 0; done < count; done += 10_000) {
		await store.reserve(
			Array.from({ length: Math.min(10_000, count - done) }, () => request(randomKey())),
			{ ...PERMANENT, retentionSeconds },
		);
	}
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const fixed = (value: number, digits = 1) => Number(value.toFixed(digits));

async function reservePart(embedded: EmbeddedModule, args: Args, folder: string) {
	const store = embedded.openEmbeddedKeyStore({ file: path.join(folder, 'reserve.sqlite'), createTable: true });
	await fill(store, args.table, PERMANENT.retentionSeconds);
	await new Promise((resolve) => setTimeout(resolve, 500));
	const reserves: Array<{ ms: number; stallMs: number; ownStallMs: number }> = [];
	const completes: Array<{ ms: number; stallMs: number; ownStallMs: number }> = [];
	for (let call = 0; call < args.calls; call++) {
		const requests = batch(10_000);
		const reserved = await measured(() => store.reserve(requests, { ...PERMANENT, mode: 'lease' }));
		if (reserved.result.filter((result) => result.outcome === 'new').length !== 9_000)
			throw new Error('a batch did not reserve its 9,000 distinct keys');
		// Only the figures are kept: the answers kept for all calls would grow this process's heap, and its garbage collector's pauses with it.
		reserves.push({ ms: reserved.ms, stallMs: reserved.stallMs, ownStallMs: reserved.ownStallMs });
		const owned = reserved.result
			.filter((result) => result.outcome === 'new')
			.map((result) => ({ key: result.key, ownerToken: result.ownerToken!, response: { ok: true } }));
		const completed = await measured(() => store.complete(owned));
		if (completed.result.some((report) => !report.applied)) throw new Error('a Mark Complete did not apply to every key');
		completes.push({ ms: completed.ms, stallMs: completed.stallMs, ownStallMs: completed.ownStallMs });
		// Back to the event loop between calls, as n8n is between executions.
		await new Promise((resolve) => setTimeout(resolve, 20));
	}
	const row = (call: string, runs: Array<{ ms: number; stallMs: number; ownStallMs: number }>): RandomKeysRow => ({
		call,
		medianMs: fixed(median(runs.map((run) => run.ms))),
		maxMs: fixed(Math.max(...runs.map((run) => run.ms))),
		stallMs: fixed(Math.max(...runs.map((run) => run.stallMs))),
		ownStallMs: fixed(Math.max(...runs.map((run) => run.ownStallMs))),
	});
	return [
		row(`Reserve (lease), 10,000 items with 1,000 repeats, random keys, into ${args.table.toLocaleString('en-US')} random keys`, reserves),
		row('Mark Complete of those 9,000 keys', completes),
	];
}

async function cleanupPart(embedded: EmbeddedModule, args: Args, folder: string): Promise<RandomKeysRow[]> {
	const file = path.join(folder, 'cleanup.sqlite');
	const store = embedded.openEmbeddedKeyStore({ file, createTable: true });
	// This process has the file open while another one fills it, as n8n has while a seeding process runs.
	await store.createTable();
	const live = Math.floor(args.cleanupRows / 10);
	const seeded = spawnSync(process.execPath, [...process.execArgv, __filename, '--seed', file, String(args.cleanupRows), String(live)], {
		stdio: 'inherit',
	});
	if (seeded.status !== 0) throw new Error(`seeding ${file} failed (exit ${seeded.status ?? seeded.signal})`);
	const { result, ms, stallMs, ownStallMs } = await measured(() =>
		store.cleanup({ retentionSeconds: 30 * 24 * 3600, batchSize: 10_000, timeBudgetSeconds: 600 }),
	);
	if (result.deleted < args.cleanupRows) throw new Error(`cleanup deleted ${result.deleted} of ${args.cleanupRows} expired keys`);
	return [
		{
			call: `Delete Expired Keys: ${args.cleanupRows.toLocaleString('en-US')} expired random keys among ${live.toLocaleString('en-US')} live`,
			medianMs: fixed(ms),
			maxMs: fixed(ms),
			rowsPerS: Math.round(result.deleted / (ms / 1000)),
			stallMs: fixed(stallMs),
			ownStallMs: fixed(ownStallMs),
		},
	];
}

async function main(): Promise<void> {
	const args = parseArgs(process.argv.slice(2));
	const embedded = built();
	if (args.seed) {
		const store = embedded.openEmbeddedKeyStore({ file: args.seed.file, createTable: true });
		await fill(store, args.seed.expired, 1);
		await fill(store, args.seed.live, PERMANENT.retentionSeconds);
		embedded.closeEmbeddedStores();
		// Retention of 1 s: waited out, so every expired key is past its end when the cleanup starts.
		await new Promise((resolve) => setTimeout(resolve, 1500));
		return;
	}
	const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'idempotency-bench-random-'));
	try {
		const load = () =>
			os
				.loadavg()
				.map((value) => value.toFixed(2))
				.join(', ');
		const out = { node: process.version, loadAtStart: load(), rows: [] as RandomKeysRow[], loadAtEnd: '' };
		console.log(
			`# The Embedded store on random keys ${new Date().toISOString()}${args.quick ? ' (quick)' : ''}; node ${process.version}; load at start ${out.loadAtStart}`,
		);
		out.rows.push(...(await reservePart(embedded, args, folder)));
		out.rows.push(...(await cleanupPart(embedded, args, folder)));
		out.loadAtEnd = load();
		console.log('\n| call | median ms | max ms | longest stall ms (without CPU wait) |\n|---|--:|--:|--:|');
		for (const row of out.rows)
			console.log(
				`| ${String(row.call)} | ${String(row.medianMs)} | ${String(row.maxMs)} | ${String(row.stallMs)} (${String(row.ownStallMs)}) |`,
			);
		for (const row of out.rows) {
			const own = Number(row.ownStallMs);
			console.log(
				`${own <= TARGET_STALL_MS ? 'TARGET HOLDS' : 'TARGET MISSED'}: ${String(row.call)}: longest event-loop stall ${own} ms without CPU wait (target ≤ ${TARGET_STALL_MS} ms)`,
			);
		}
		console.log(`\nload at end ${out.loadAtEnd}`);
		if (args.json) fs.writeFileSync(args.json, `${JSON.stringify(out, null, 2)}\n`);
	} finally {
		embedded.closeEmbeddedStores();
		fs.rmSync(folder, { recursive: true, force: true });
	}
}

main().then(
	() => process.exit(0),
	(error: unknown) => {
		console.error(`bench/embeddedRandomKeys.ts failed: ${error instanceof Error ? error.message : String(error)}`);
		process.exit(1);
	},
);
