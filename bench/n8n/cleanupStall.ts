#!/usr/bin/env node
// Delete Expired Keys inside n8n (the cleanup part of bench/n8n/run.js), with what that part cannot
// tell apart: n8n's longest event-loop stall while the cleanup runs, beside the same probe on the
// same n8n idle for as long (its own stalls, and the machine's), each also without the time n8n's
// main thread waited for a CPU (Linux's per-thread schedstat, read before and after each probe
// request). On a shared machine the wall figure holds other jobs' load; the one without CPU wait is
// what n8n's own work kept it from answering.
//
//   node -r ./test/support/register-ts.js bench/n8n/cleanupStall.ts [--cleanup-rows N] [--rounds N] [--json FILE]
//
// Needs the cached n8n (scripts/ensure-n8n.sh) and the built package (npm run build); drops and
// recreates the databases n8n_bench and idempotency_bench, as bench/n8n/run.js does.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import * as stack from '../../test/support/stack/n8nStack';
import { percentile } from '../stats';
import { sqliteNode } from '../sqliteNode';
import { findN8nPid } from './proc';
import { CLEANUP_FLOWS, cleanupWorkflows } from './workflows';

interface Args {
	cleanupRows: number;
	rounds: number;
	json?: string;
}

function parseArgs(argv: string[]): Args {
	const args: Args = { cleanupRows: 1_000_000, rounds: 1 };
	for (let i = 0; i < argv.length; i++) {
		if (argv[i] === '--cleanup-rows') args.cleanupRows = Number(argv[++i]);
		else if (argv[i] === '--rounds') args.rounds = Number(argv[++i]);
		else if (argv[i] === '--json') args.json = path.resolve(argv[++i]);
		else throw new Error(`unknown argument ${argv[i]} (see the comment at the top of bench/n8n/cleanupStall.ts)`);
	}
	return args;
}

/** The run-queue wait of n8n's main thread so far, in ms (0 where Linux does not say). */
function runQueueWaitMs(pid: number): number {
	try {
		return Number(fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
	} catch {
		return 0;
	}
}

interface Lag {
	samples: number;
	/** The slowest answer minus a typical one (bench/n8n/lag.js's figure). */
	stallMs: number;
	/** The same with each answer's time less what n8n's main thread waited for a CPU meanwhile. */
	ownStallMs: number;
}

/** GET /healthz every 5 ms, one at a time, as bench/n8n/lag.js does, also reading n8n's CPU wait around each. */
function lagProbe(baseUrl: string, pid: number): () => Promise<Lag> {
	let running = true;
	const wall: number[] = [];
	const own: number[] = [];
	const loop = (async () => {
		while (running) {
			const waitBefore = runQueueWaitMs(pid);
			const started = performance.now();
			try {
				const res = await fetch(`${baseUrl}/healthz`);
				await res.arrayBuffer();
				const ms = performance.now() - started;
				wall.push(ms);
				own.push(ms - (runQueueWaitMs(pid) - waitBefore));
			} catch {
				// a refused connection is not a stall measurement
			}
			await new Promise((resolve) => setTimeout(resolve, 5));
		}
	})();
	return async () => {
		running = false;
		await loop;
		return { samples: wall.length, stallMs: Math.max(...wall) - percentile(wall, 50), ownStallMs: Math.max(...own) - percentile(own, 50) };
	};
}

const fixed = (value: number) => Number(value.toFixed(1));
const load = () =>
	os
		.loadavg()
		.map((value) => value.toFixed(2))
		.join(', ');

async function main(): Promise<number> {
	const args = parseArgs(process.argv.slice(2));
	const started = Date.now();
	const log = (line: string) => process.stderr.write(`[cleanupStall ${((Date.now() - started) / 1000).toFixed(0)}s] ${line}\n`);
	const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'idempotency-bench-cleanup-stall-'));
	let running: Awaited<ReturnType<typeof stack.startStack>> | undefined;
	try {
		console.log(`# Delete Expired Keys inside n8n, beside n8n idle, ${new Date().toISOString()}; load at start ${load()}`);
		running = await stack.startStack({
			workDir,
			recreateDbs: true,
			dbNames: { n8n: 'n8n_bench', app: 'idempotency_bench' },
			setupSql: stack.prepareTemplateTables,
			credentials: (c) => stack.templateCredentials(c),
			// Spread into plain objects: startStack's WorkflowJson takes further members (an index
			// signature), which an interface type does not match.
			workflows: cleanupWorkflows().map((json) => ({ json, publish: true })),
			readyWebhooks: CLEANUP_FLOWS.map((flow: { path: string }) => flow.path),
			log,
		});
		const stackNow = running;
		const pid = findN8nPid(stackNow.workDir);
		if (!pid) throw new Error('could not find the n8n process of the stack');
		const appQuery = (sql: string, params?: unknown[]) =>
			stack.withClient(stackNow.appUrl, (client: { query: (sql: string, params?: unknown[]) => Promise<unknown> }) =>
				client.query(sql, params),
			);
		const file = path.join(stackNow.userFolder, '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
		const rows: Array<Record<string, unknown>> = [];
		const expired = args.cleanupRows;
		const live = Math.floor(expired / 10);
		for (let round = 0; round < args.rounds; round++) {
			// Seeded as bench/n8n/run.js seeds them: another process fills the file n8n has open, one insert for Postgres.
			const seeded = spawnSync(sqliteNode(), [path.join(__dirname, 'seedEmbedded.js'), file, String(expired), String(live)], {
				cwd: path.join(__dirname, '..', '..'),
				stdio: ['ignore', 'inherit', 'inherit'],
			});
			if (seeded.status !== 0) throw new Error(`seeding ${file} failed (exit ${seeded.status ?? seeded.signal})`);
			await appQuery(
				`INSERT INTO processed_events (key, status, first_seen, last_seen, expires_at, owner_token)
				 SELECT 'cleanup_${round}_' || g || '_' || md5(g::text), 'completed', now() - interval '40 days', now() - interval '40 days',
				        CASE WHEN g <= $1 THEN now() - interval '10 days' ELSE now() + interval '30 days' END, gen_random_uuid()
				   FROM generate_series(1, $2::int) AS g`,
				[expired, expired + live],
			);
			await appQuery('VACUUM ANALYZE processed_events').catch(() => undefined);
			for (const flow of CLEANUP_FLOWS as Array<{ path: string; label: string }>) {
				const stop = lagProbe(stackNow.baseUrl, pid);
				const flowStarted = performance.now();
				const res = await fetch(stackNow.webhookUrl(flow.path), {
					method: 'POST',
					headers: { 'content-type': 'application/json' },
					body: '{}',
				});
				const text = await res.text();
				const ms = performance.now() - flowStarted;
				const lag = await stop();
				if (res.status !== 200) throw new Error(`${flow.label} answered ${res.status}: ${text.slice(0, 300)}`);
				const answer = JSON.parse(text) as unknown;
				const result = ((Array.isArray(answer) ? answer[0] : answer) ?? {}) as { deleted?: number };
				if (!(Number(result.deleted) >= expired))
					throw new Error(`${flow.label}: deleted ${result.deleted} of ${expired} (answer ${text.slice(0, 300)})`);
				// The control: the same probe, as long, with n8n doing nothing asked of it.
				const stopIdle = lagProbe(stackNow.baseUrl, pid);
				await new Promise((resolve) => setTimeout(resolve, ms));
				const idle = await stopIdle();
				rows.push({
					flow: flow.label,
					deleted: Number(result.deleted),
					wallMs: Math.round(ms),
					rowsPerS: Math.round(Number(result.deleted) / (ms / 1000)),
					stallMs: fixed(lag.stallMs),
					ownStallMs: fixed(lag.ownStallMs),
					probes: lag.samples,
					idleStallMs: fixed(idle.stallMs),
					idleOwnStallMs: fixed(idle.ownStallMs),
					idleProbes: idle.samples,
					load: load(),
				});
				log(
					`${flow.label}: ${result.deleted} deleted in ${Math.round(ms)} ms; stall ${fixed(lag.stallMs)} ms (${fixed(lag.ownStallMs)} without CPU wait); n8n idle as long: ${fixed(idle.stallMs)} (${fixed(idle.ownStallMs)})`,
				);
			}
		}
		console.log(
			`\n| flow | deleted | wall ms | rows/s | longest n8n stall ms (without CPU wait) | n8n idle as long: longest stall ms (without CPU wait) |\n|---|--:|--:|--:|--:|--:|`,
		);
		for (const r of rows)
			console.log(
				`| ${String(r.flow)} | ${String(r.deleted)} | ${String(r.wallMs)} | ${String(r.rowsPerS)} | ${String(r.stallMs)} (${String(r.ownStallMs)}) | ${String(r.idleStallMs)} (${String(r.idleOwnStallMs)}) |`,
			);
		console.log(`\nload at end ${load()}; total ${((Date.now() - started) / 1000).toFixed(0)} s`);
		if (args.json)
			fs.writeFileSync(
				args.json,
				`${JSON.stringify({ command: `node bench/n8n/cleanupStall.ts ${process.argv.slice(2).join(' ')}`, rows }, null, 2)}\n`,
			);
		return 0;
	} catch (error) {
		console.error(`bench/n8n/cleanupStall.ts failed: ${error instanceof Error ? error.message : String(error)}`);
		if (running) console.error(`n8n log: ${running.logFile}`);
		return 1;
	} finally {
		if (running) await running.stop();
		fs.rmSync(workDir, { recursive: true, force: true });
	}
}

void main().then((code) => process.exit(code));
