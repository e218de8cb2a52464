// What the package costs inside a real n8n (the default proven version, Node 24, the packed package installed as a
// community package, Postgres for n8n and for the keys), measured side by side in one run:
//
//  1. per-execution overhead: Webhook → Postgres insert → Respond vs the same with Reserve in front
//     (permanent; lease + Mark Complete), at 1 and 8 concurrent clients, interleaved rounds;
//  2. batch: 10,000 items with 1,000 repeats through Reserve vs the stock Postgres node per item vs
//     Remove Duplicates, each minus a no-op flow, interleaved rounds;
//  3. one 100,000-item execution through Reserve, with n8n's resident memory;
//  4. Delete Expired Keys on 1 M expired keys, Embedded and Postgres, with n8n's longest
//     event-loop stall (a /healthz probe, bench/n8n/lag.ts).
// The Embedded store (node:sqlite, a file in n8n's folder) runs beside Postgres in each part.
//
//   npm run bench:n8n                                       full run (about 10 minutes on 2 busy cores)
//   npm run bench:n8n -- --quick                            smoke run: tiny sizes, one round (n8n's start dominates)
//   npm run bench:n8n -- --rounds 8 --requests 100 --only overhead
//
// Flags: --quick, --rounds N, --requests N (per flow, round and concurrency), --batch-items N,
// --big-items N, --big-key event|custom|field, --only overhead,batch,big, --keep (leave the work folder for a look at n8n.log),
// --batch-flows reserveAuto,reserveAutoFull,… (measure only these batch flows, beside the no-op one; kinds in workflows.ts),
// --only trigger: the Idempotent Webhook trigger beside the webhook template (on each store), a bare webhook flow and a floor trigger (bench/n8n/trigger.ts),
// --trigger-flows trigger,triggerPostgres,bare (with --only trigger: only these, beside the floor and each trigger's template),
// --only atOnce: the trigger answering At Once with a 10 s step, beside the floor trigger (bench/n8n/atOnce.ts),
// --n8n-env NAME=VALUE,… (n8n runs with these variables set: to see what an n8n setting changes, e.g. N8N_EXPRESSION_ENGINE=legacy),
// --save FILE (with --only trigger or --only atOnce: its rows as a bench/results file, to fill in the machine's and the run's notes),
// --profile (instead of measuring: a CPU profile of n8n's main process per workload, summarised by
// where the time goes; the .cpuprofile file is kept for Chrome DevTools).
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client as PgClient } from 'pg';

import { startSink } from '../../test/support/e2e/sink';
import * as stack from '../../test/support/stack/n8nStack';
import { sqliteNode } from '../sqliteNode';
import { median, percentile, fmt, fmtRatio, fmtMs, printTable, rotate, loadAverage } from '../stats';
import { lagProbe } from './lag';
import { findN8nPid, cpuSeconds, memoryMb, sampleRss } from './proc';
import { profilingEnv, summarise, nowMicros, type ProfileSummary, type ProfileWindow } from './profile';
import { triggerBench, triggerFlowsOf, triggerProfileWindows, type TriggerRow } from './trigger';
import { atOnceBench, atOnceProfileWindows, type AtOnceRow } from './atOnce';
import {
	OVERHEAD_FLOWS,
	UNNAMED_CREDENTIAL_DEF,
	BATCH_FLOWS,
	RESERVE_KINDS,
	EMBEDDED_KINDS,
	CLEANUP_FLOWS,
	TRIGGER_FLOWS,
	AT_ONCE_FLOWS,
	FLOOR_PACKAGE_DIR,
	RECIPE_TABLE_DDL,
	overheadWorkflows,
	embeddedOverheadWorkflows,
	batchWorkflows,
	cleanupWorkflows,
	triggerWorkflows,
	type OverheadFlow,
} from './workflows';

// The benchmarks are TypeScript: a Node they start loads the hook that transpiles them.
const REGISTER_TS = path.join(__dirname, '..', '..', 'test', 'support', 'register-ts.js');

/** The stack the benchmark runs in (test/support/stack/n8nStack's startStack). */
export type Running = stack.Stack;

/** What the benchmark uses of the API its trigger flows call (test/support/e2e/sink). */
export interface Api {
	url: string;
	holdNext: (key: string) => Promise<unknown>;
	answerHeld: (key: string) => boolean;
	/** Every later call of `key` works `ms` before it answers. */
	slow: (key: string, ms: number) => void;
	/** Calls of `key` answered 2xx (its effects). */
	calls: (key: string) => number;
	close: () => Promise<unknown>;
}

/** A node's entry in an execution's run data, as n8n stores it (flatted). */
interface NodeRun {
	executionTime: number;
	data?: { main?: Array<unknown[] | null> };
}
type RunData = Record<string, NodeRun[] | undefined>;

/** n8n's own flatted (the format of its stored execution data), from the n8n install the stack runs. */
function flattedOf(running: Pick<Running, 'n8nDir'>): { parse: (text: string) => { resultData?: { runData?: RunData } } } {
	// eslint-disable-next-line @typescript-eslint/no-require-imports -- a module of the installed n8n, found at run time
	return require(path.join(running.n8nDir, 'node_modules', 'flatted')) as {
		parse: (text: string) => { resultData?: { runData?: RunData } };
	};
}

/** What every part is given: the stack, n8n's pid, the log and the queries it runs. */
export interface BenchContext {
	running: Running;
	pid: number;
	log: (line: string) => void;
	appQuery: <R extends Record<string, unknown>>(sql: string, params?: unknown[]) => Promise<{ rows: R[] }>;
	lastExecution: (flow: { id: string; nodeName: string }) => Promise<{ bytes: number; nodeMs: number; outputs: number[] }>;
}

/** A Stripe-like event (stripeEvent), as the flows receive it. */
export type StripeEvent = ReturnType<typeof stripeEvent>;

const TARGET = {
	throughputCost: 0.05,
	p50AddedMs: 3,
	batchKeysPerSecond: 50000,
	batchVsRecipe: 25,
	// The Embedded store: Reserve costs at most a No Operation node + 1 ms per execution; a batch
	// reaches 100,000 keys/s net (twice the Postgres path's best); n8n's event loop never stalls
	// longer than 50 ms in one store call (a batch, Delete Expired Keys on 1 M rows).
	embeddedAddedMsOverNoOp: 1,
	embeddedBatchKeysPerSecond: 100000,
	longestStallMs: 50,
};
const PARTS = ['overhead', 'batch', 'big', 'cleanup', 'trigger', 'atOnce'];
// The trigger and At Once parts install a second package (the floor node) and run only when asked for.
const DEFAULT_PARTS = ['overhead', 'batch', 'big', 'cleanup'];
// The overhead flows this run drives (--overhead-flows: the baseline and the listed paths).
let overheadFlows = OVERHEAD_FLOWS;

export interface Args {
	quick: boolean;
	keep: boolean;
	only: string[];
	profile?: boolean;
	profileConcurrency: number;
	rounds: number;
	requests: number;
	batchItems: number;
	batchRounds: number;
	bigItems: number;
	bigKey: string;
	cleanupRows: number;
	save?: string;
	batchFlows?: string[];
	overheadFlows?: string[];
	triggerFlows?: string[];
	n8nEnv?: Record<string, string>;
}

function parseArgs(argv: string[]): Args {
	const args: Partial<Args> & Pick<Args, 'quick' | 'keep' | 'only'> = { quick: false, keep: false, only: DEFAULT_PARTS };
	for (let i = 0; i < argv.length; i++) {
		const arg = argv[i];
		const next = () => Number(argv[++i]);
		if (arg === '--quick') args.quick = true;
		else if (arg === '--keep') args.keep = true;
		else if (arg === '--profile') args.profile = true;
		else if (arg === '--profile-concurrency') args.profileConcurrency = next();
		else if (arg === '--rounds') args.rounds = next();
		else if (arg === '--requests') args.requests = next();
		else if (arg === '--batch-items') args.batchItems = next();
		else if (arg === '--big-items') args.bigItems = next();
		else if (arg === '--big-key') args.bigKey = argv[++i];
		else if (arg === '--cleanup-rows') args.cleanupRows = next();
		else if (arg === '--only') args.only = argv[++i].split(',');
		else if (arg === '--save') args.save = argv[++i];
		else if (arg === '--batch-flows') args.batchFlows = argv[++i].split(',');
		else if (arg === '--overhead-flows') args.overheadFlows = argv[++i].split(',');
		else if (arg === '--trigger-flows') args.triggerFlows = argv[++i].split(',');
		else if (arg === '--n8n-env') args.n8nEnv = n8nEnvOf(argv[++i]);
		else if (arg === '--help' || arg === '-h') {
			console.log(
				'usage: npm run bench:n8n -- [--quick] [--rounds N] [--requests N] [--batch-items N] [--big-items N] [--big-key event|custom|field] [--cleanup-rows N] [--only overhead,batch,big,cleanup,trigger,atOnce] [--save results.json] [--overhead-flows path,…] [--batch-flows kind,…] [--trigger-flows key,…] [--n8n-env NAME=VALUE,…] [--profile [--profile-concurrency N]] [--keep]',
			);
			process.exit(0);
		} else throw new Error(`unknown argument ${arg} (try --help)`);
	}
	for (const part of args.only) if (!PARTS.includes(part)) throw new Error(`--only takes ${PARTS.join(', ')}`);
	const rounds = args.rounds ?? (args.quick ? 1 : 6);
	const parsed: Args = {
		...args,
		rounds,
		profileConcurrency: args.profileConcurrency ?? 8,
		requests: args.requests ?? (args.quick ? 6 : 100),
		batchItems: args.batchItems ?? (args.quick ? 200 : 10000),
		batchRounds: args.quick ? 1 : Math.max(3, Math.ceil(rounds / 2)),
		bigItems: args.bigItems ?? (args.quick ? 2000 : 100000),
		cleanupRows: args.cleanupRows ?? (args.quick ? 20000 : 1000000),
		// The big execution's key source: event id or field `id` (read from the item) or custom ({{ $json.id }}, an expression per item).
		bigKey: args.bigKey ?? 'event',
	};
	if (!['event', 'custom', 'field'].includes(parsed.bigKey)) throw new Error('--big-key takes event, custom or field');
	for (const flowPath of parsed.overheadFlows ?? []) {
		if (!OVERHEAD_FLOWS.some((flow) => flow.path === flowPath))
			throw new Error(`--overhead-flows takes ${OVERHEAD_FLOWS.map((flow) => flow.path).join(', ')}`);
	}
	for (const key of parsed.triggerFlows ?? []) {
		if (!TRIGGER_FLOWS.some((flow) => flow.key === key))
			throw new Error(`--trigger-flows takes ${TRIGGER_FLOWS.map((flow) => flow.key).join(', ')}`);
	}
	for (const kind of parsed.batchFlows ?? []) {
		if (!BATCH_FLOWS.some((flow) => flow.kind === kind))
			throw new Error(`--batch-flows takes ${BATCH_FLOWS.map((flow) => flow.kind).join(', ')}`);
	}
	for (const name of ['rounds', 'requests', 'batchItems', 'bigItems', 'profileConcurrency', 'cleanupRows'] as const) {
		if (!(Number.isInteger(parsed[name]) && parsed[name] >= 1)) throw new Error(`--${name} must be a whole number >= 1`);
	}
	return parsed;
}

/** `NAME=VALUE,NAME=VALUE` as variables for n8n; only n8n's own (N8N_…) are taken. */
function n8nEnvOf(text: string): Record<string, string> {
	const env: Record<string, string> = {};
	for (const pair of text.split(',')) {
		const at = pair.indexOf('=');
		const name = pair.slice(0, at);
		if (at < 1 || !/^N8N_[A-Z0-9_]+$/.test(name)) throw new Error(`--n8n-env takes N8N_NAME=VALUE pairs, not ${pair}`);
		env[name] = pair.slice(at + 1);
	}
	return env;
}

// ---------------------------------------------------------------------------------------------
// load

/**
 * A Stripe-like `invoice.paid` event of ~1.9 KB (the size of a typical provider event), for the
 * flows that store the payload: what Store Payload writes per delivery.
 */
function stripeEvent(id: string) {
	const line = (n: number) => ({
		id: `il_${n}${id.slice(-12)}`,
		object: 'line_item',
		amount: 1200 + n,
		currency: 'eur',
		description: `1 × Pro plan, seat ${n} (at €12.00 / month)`,
		period: { start: 1764460800, end: 1767139200 },
		price: { id: 'price_1QabcDEFghiJKLmn', product: 'prod_RabcDEFghiJKL', unit_amount: 1200, recurring: { interval: 'month' } },
		quantity: 1,
	});
	return {
		id,
		object: 'event',
		api_version: '2024-06-20',
		created: 1764460800,
		type: 'invoice.paid',
		livemode: false,
		pending_webhooks: 1,
		request: { id: null, idempotency_key: null },
		data: {
			object: {
				id: `in_${id.slice(-20)}`,
				object: 'invoice',
				amount_due: 3600,
				amount_paid: 3600,
				currency: 'eur',
				customer: 'cus_RabcDEFghiJKL',
				customer_email: 'billing@example.com',
				hosted_invoice_url: 'https://invoice.stripe.com/i/acct_1QabcDEF/test_YWNjdF8xUWFiY0RFRg',
				status: 'paid',
				subscription: 'sub_1QabcDEFghiJKLmn',
				lines: { object: 'list', data: [line(1), line(2), line(3)], has_more: false },
			},
		},
	};
}

/** `count` POSTs with a fresh Idempotency-Key each, `concurrency` at a time; latencies in ms. */
async function drive(
	url: string,
	{ count, concurrency, tag, body: bodyKind }: { count: number; concurrency: number; tag: string; body?: 'stripe' },
): Promise<{ latencies: number[]; seconds: number; perSecond: number }> {
	const latencies: number[] = [];
	let next = 0;
	let failures = 0;
	const worker = async () => {
		while (next < count) {
			const i = next++;
			const key = `${tag}-${i}-${crypto.randomUUID()}`;
			const body = JSON.stringify(
				bodyKind === 'stripe'
					? stripeEvent(key)
					: {
							id: key,
							type: 'invoice.paid',
							data: { amount: 1200 },
						},
			);
			const started = performance.now();
			const res = await fetch(url, {
				method: 'POST',
				headers: { 'content-type': 'application/json', 'idempotency-key': key },
				body,
			});
			await res.arrayBuffer();
			latencies.push(performance.now() - started);
			if (res.status !== 200) failures += 1;
		}
	};
	const started = performance.now();
	await Promise.all(Array.from({ length: concurrency }, worker));
	const seconds = (performance.now() - started) / 1000;
	if (failures) throw new Error(`${failures}/${count} requests to ${url} did not answer 200 (see n8n.log)`);
	return { latencies, seconds, perSecond: count / seconds };
}

/** The batch body: `items` events, the last tenth repeating ids from the start of the batch. */
function batchBody(items: number, prefix: string): { body: string; distinct: number } {
	const repeats = Math.floor(items / 10);
	const events = new Array<{ id: string; type: string; amount: number }>(items);
	for (let i = 0; i < items; i++) {
		const n = i < items - repeats ? i : i - (items - repeats);
		events[i] = {
			id: `${prefix}_${n.toString(36).padStart(6, '0')}`,
			type: 'invoice.paid',
			amount: 1200 + (n % 97),
		};
	}
	return { body: JSON.stringify({ events }), distinct: items - repeats };
}

async function post(url: string, body: string): Promise<number> {
	const started = performance.now();
	const res = await fetch(url, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body,
	});
	const text = await res.text();
	const ms = performance.now() - started;
	if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
	return ms;
}

// ---------------------------------------------------------------------------------------------
// parts

/** One overhead flow at one concurrency, over the rounds. */
interface FlowResult {
	latencies: number[];
	perSecond: number[];
	p50: number[];
	cpuMsPerExec: number[];
}
type FlowResults = Map<string, FlowResult>;

/** A flow's results at a concurrency: every flow of the run has them. */
function resultOf(results: FlowResults, flowId: string, concurrency: number): FlowResult {
	const result = results.get(`${flowId}@${concurrency}`);
	if (!result) throw new Error(`no results for ${flowId} at c=${concurrency}`);
	return result;
}

async function overhead(ctx: BenchContext, args: Args): Promise<void> {
	const { running, pid, log } = ctx;
	const results: FlowResults = new Map(); // `${flow.id}@${c}` -> { latencies, perSecond[], cpuMsPerExec[] }
	const warm = args.quick ? 3 : 15;
	for (const flow of overheadFlows)
		await drive(running.webhookUrl(flow.path), {
			count: warm,
			concurrency: 1,
			tag: 'warm',
			body: flow.body,
		});
	for (let round = 0; round < args.rounds; round++) {
		for (const concurrency of [1, 8]) {
			for (const flow of rotate(overheadFlows, round + concurrency)) {
				const cpuBefore = cpuSeconds(pid);
				const result = await drive(running.webhookUrl(flow.path), {
					count: args.requests,
					concurrency,
					tag: `r${round}`,
					body: flow.body,
				});
				const cpuMs = ((cpuSeconds(pid) - cpuBefore) * 1000) / args.requests;
				const key = `${flow.id}@${concurrency}`;
				const entry = results.get(key) ?? {
					latencies: [],
					perSecond: [],
					p50: [],
					cpuMsPerExec: [],
				};
				entry.latencies.push(...result.latencies);
				entry.perSecond.push(result.perSecond);
				entry.p50.push(percentile(result.latencies, 50));
				entry.cpuMsPerExec.push(cpuMs);
				results.set(key, entry);
			}
		}
		log(`overhead round ${round + 1}/${args.rounds} done (load ${loadAverage()})`);
	}

	const rows: string[][] = [];
	const verdicts: string[] = [];
	for (const concurrency of [1, 8]) {
		const base = resultOf(results, overheadFlows[0].id, concurrency);
		for (const flow of overheadFlows) {
			const r = resultOf(results, flow.id, concurrency);
			const isBase = flow === overheadFlows[0];
			// Each round pairs the flows within seconds of each other: per-round ratios, then the median.
			const ratios = r.perSecond.map((x, i) => x / base.perSecond[i]);
			const p50Deltas = r.p50.map((x, i) => x - base.p50[i]);
			const ratio = median(ratios);
			const addedP50 = median(p50Deltas);
			rows.push([
				flow.label,
				`c=${concurrency}`,
				median(r.perSecond).toFixed(1),
				isBase ? '1' : fmtRatio(ratio),
				isBase ? '–' : `${fmtRatio(Math.min(...ratios), 2)}–${fmtRatio(Math.max(...ratios), 2)}`,
				fmtMs(percentile(r.latencies, 50)),
				isBase ? '–' : `${addedP50 >= 0 ? '+' : ''}${fmtMs(addedP50)}`,
				fmtMs(percentile(r.latencies, 99)),
				fmtMs(median(r.cpuMsPerExec)),
			]);
			if (!isBase) {
				const cost = 1 - ratio;
				const ok = cost <= TARGET.throughputCost && addedP50 <= TARGET.p50AddedMs;
				verdicts.push(
					`${ok ? 'TARGET HOLDS' : 'TARGET MISSED'}: ${flow.label}, c=${concurrency}: costs ${(cost * 100).toFixed(1)} % throughput (target ≤ ${TARGET.throughputCost * 100} %), ${addedP50 >= 0 ? '+' : ''}${addedP50.toFixed(1)} ms p50 (target ≤ +${TARGET.p50AddedMs} ms)`,
				);
			}
		}
	}
	console.log(`\n## Per-execution overhead (${args.rounds} interleaved rounds × ${args.requests} requests per flow and concurrency)\n`);
	printTable(
		['flow', 'clients', 'req/s (median)', 'ratio to baseline', 'ratio min–max', 'p50 ms', 'added p50 ms', 'p99 ms', 'n8n CPU ms/exec'],
		rows,
	);
	console.log(
		'\nratio: median of per-round throughput ratios; added p50: median of per-round p50 differences; p50/p99: all rounds pooled.',
	);
	console.log('n8n CPU: user+system CPU of the n8n main process per execution (Postgres and the client not included).');
	printPairedComparison(results, PREPARED_STATEMENTS_ON_VS_OFF);
	for (const line of verdicts) console.log(line);
	printPairedComparison(results, STORE_PAYLOAD_ON_VS_OFF);
	printPairedComparison(results, RESERVE_VS_NO_OPERATION);
	printPairedComparison(results, SETTLE_VS_MARK_COMPLETE);
	printPairedComparison(results, EMBEDDED_VS_POSTGRES);
	printPairedComparison(results, EMBEDDED_LEASE_VS_POSTGRES_LEASE);
	embeddedVsNoOperation(results);
	await packageNodeTimes(ctx);
}

/*
 * Two flows of the overhead run that differ in one thing, compared round by round (each printed
 * only when --overhead-flows kept both).
 */
const PREPARED_STATEMENTS_ON_VS_OFF = {
	title: () => 'Prepared Statements on vs off (Reserve permanent, the same flow, the credential differs):',
	before: 'BenchFlowPermU01',
	after: 'BenchFlowPerm001',
	ratioLabel: 'on/off',
};
const STORE_PAYLOAD_ON_VS_OFF = {
	title: () =>
		`Store Payload on vs off (the template-like flow, a ${fmt(Buffer.byteLength(JSON.stringify(stripeEvent(`r0-0-${crypto.randomUUID()}`))))}-byte body stored per delivery):`,
	before: 'BenchFlowTmplOff',
	after: 'BenchFlowTmplOn1',
	ratioLabel: 'on/off',
};
// Reserve's own work (one statement, its credential, its output), apart from what n8n charges any node for being there.
const RESERVE_VS_NO_OPERATION = {
	title: () => 'Reserve (permanent) vs a No Operation node in the same place (what Reserve costs above any node):',
	before: 'BenchFlowNoOp001',
	after: 'BenchFlowPerm001',
	ratioLabel: 'Reserve/No Operation',
};

// The templates' Settle beside the business step against Mark Complete after it (paired item): the same statement, plus reading n8n's record.
const SETTLE_VS_MARK_COMPLETE = {
	title: () => 'Settle After Business Step vs Mark Complete (paired item) after the same insert (lease):',
	before: 'BenchFlowLeaseP1',
	after: 'BenchFlowSettle1',
	ratioLabel: 'Settle/Complete',
};

// The Embedded store in the same places as the Postgres one.
const EMBEDDED_VS_POSTGRES = {
	title: () => 'Reserve (permanent), Embedded vs Postgres, in the same place:',
	before: 'BenchFlowPerm001',
	after: 'BenchFlowEmbP001',
	ratioLabel: 'Embedded/Postgres',
};
const EMBEDDED_LEASE_VS_POSTGRES_LEASE = {
	title: () => 'Reserve (lease) + Mark Complete (paired item), Embedded vs Postgres:',
	before: 'BenchFlowLeaseP1',
	after: 'BenchFlowEmbL001',
	ratioLabel: 'Embedded/Postgres',
};
const NO_OPERATION_FLOW = 'BenchFlowNoOp001';
const EMBEDDED_RESERVE_FLOW = 'BenchFlowEmbP001';

/**
 * Embedded Reserve against a No Operation node in the same place: the time per execution each
 * costs (1 / throughput, so at 8 clients the time the 2 cores spend per execution), paired round by
 * round; the target is at most 1 ms more than the No Operation node.
 */
/** Two overhead flows to compare, round by round. */
interface PairedComparison {
	title: () => string;
	before: string;
	after: string;
	ratioLabel: string;
}

function embeddedVsNoOperation(results: FlowResults): void {
	const noOp = overheadFlows.find((flow) => flow.id === NO_OPERATION_FLOW);
	const reserve = overheadFlows.find((flow) => flow.id === EMBEDDED_RESERVE_FLOW);
	if (!noOp || !reserve) return;
	console.log('\nReserve (Embedded, permanent) vs a No Operation node in the same place (target: at most +1 ms per execution):');
	printPairedCost(results, noOp, reserve, 'Reserve/No Operation');
	for (const concurrency of [1, 8]) {
		const a = resultOf(results, noOp.id, concurrency);
		const b = resultOf(results, reserve.id, concurrency);
		const addedMs = median(b.perSecond.map((x, i) => 1000 / x - 1000 / a.perSecond[i]));
		const cpuMs = median(b.cpuMsPerExec.map((x, i) => x - a.cpuMsPerExec[i]));
		const ok = addedMs <= TARGET.embeddedAddedMsOverNoOp;
		console.log(
			`${ok ? 'TARGET HOLDS' : 'TARGET MISSED'}: Reserve (Embedded) vs No Operation, c=${concurrency}: ${addedMs >= 0 ? '+' : ''}${addedMs.toFixed(2)} ms per execution (target ≤ +${TARGET.embeddedAddedMsOverNoOp} ms), n8n CPU ${cpuMs >= 0 ? '+' : ''}${cpuMs.toFixed(2)} ms/exec`,
		);
	}
}

function printPairedComparison(results: FlowResults, { title, before, after, ratioLabel }: PairedComparison): void {
	const beforeFlow = overheadFlows.find((flow) => flow.id === before);
	const afterFlow = overheadFlows.find((flow) => flow.id === after);
	if (!beforeFlow || !afterFlow) return;
	console.log(`\n${title()}`);
	printPairedCost(results, beforeFlow, afterFlow, ratioLabel);
}

/**
 * The package's nodes' own time per execution, from n8n's run data (executionTime: the node's
 * execute() including the expressions n8n evaluates for its parameters), over every execution of
 * the overhead flows: what Key From Custom's two expressions cost beside the paired-item read.
 */
async function packageNodeTimes(ctx: Pick<BenchContext, 'running'>): Promise<void> {
	const { running } = ctx;
	const { parse } = flattedOf(running);
	const rows: string[][] = [];
	for (const flow of overheadFlows) {
		const times = new Map<string, number[]>();
		await stack.withClient(running.n8nDbUrl, async (client: PgClient) => {
			const { rows: executions } = await client.query<{ data: string }>(
				`SELECT d.data FROM execution_entity e JOIN execution_data d ON d."executionId" = e.id WHERE e."workflowId" = $1 AND e.status = 'success'`,
				[flow.id],
			);
			for (const { data } of executions) {
				const runData = parse(data).resultData?.runData ?? {};
				// The stock Postgres node beside ours: both look up a credential and run one statement.
				for (const name of ['No Operation', 'Recipe reserve', 'Postgres insert', 'Idempotency Reserve', 'Mark Complete', 'Settle']) {
					const time = runData[name]?.[0]?.executionTime;
					if (time !== undefined) times.set(name, [...(times.get(name) ?? []), time]);
				}
			}
		});
		for (const [name, list] of times) rows.push([flow.label, name, fmt(list.length), fmtMs(median(list)), fmtMs(percentile(list, 90))]);
	}
	console.log(
		"\n### The nodes' own time (n8n run data executionTime, every execution of the runs above; the stock Postgres node beside the package's)\n",
	);
	printTable(['flow', 'node', 'executions', 'median ms', 'p90 ms'], rows);
}

/** Flow `after` against flow `before`, paired round by round at each concurrency: throughput ratio, p50 and n8n CPU differences. */
function printPairedCost(results: FlowResults, before: OverheadFlow, after: OverheadFlow, ratioLabel: string): void {
	for (const concurrency of [1, 8]) {
		const a = resultOf(results, before.id, concurrency);
		const b = resultOf(results, after.id, concurrency);
		const ratios = b.perSecond.map((x, i) => x / a.perSecond[i]);
		const p50 = median(b.p50.map((x, i) => x - a.p50[i]));
		const cpu = median(b.cpuMsPerExec.map((x, i) => x - a.cpuMsPerExec[i]));
		console.log(
			`  c=${concurrency}: throughput ratio ${ratioLabel} ${fmtRatio(median(ratios))} (${fmtRatio(Math.min(...ratios), 2)}–${fmtRatio(Math.max(...ratios), 2)}), p50 ${p50 >= 0 ? '+' : ''}${p50.toFixed(1)} ms, n8n CPU ${cpu >= 0 ? '+' : ''}${cpu.toFixed(2)} ms/exec (medians of per-round differences)`,
		);
	}
}

async function batch(ctx: BenchContext, args: Args): Promise<void> {
	const { running, pid, log, appQuery, lastExecution } = ctx;
	const items = args.batchItems;
	const flows = BATCH_FLOWS.filter((flow) => flow.kind === 'noop' || !args.batchFlows || args.batchFlows.includes(flow.kind));
	type Entry = { ms: number[]; cpuMs: number[]; savedBytes: number[]; nodeMs: number[]; stallMs: number[] };
	const perFlow = new Map<string, Entry>(flows.map((flow) => [flow.kind, { ms: [], cpuMs: [], savedBytes: [], nodeMs: [], stallMs: [] }]));
	const entryOf = (kind: string): Entry => {
		const entry = perFlow.get(kind);
		if (!entry) throw new Error(`no batch flow ${kind} in this run`);
		return entry;
	};
	// One warm-up execution per flow: code paths, the pools, the tables' first pages.
	for (const flow of flows) await post(running.webhookUrl(flow.path), batchBody(Math.min(items, 500), `warm_${flow.kind}`).body);
	for (let round = 0; round < args.batchRounds; round++) {
		for (const flow of rotate(flows, round)) {
			const prefix = `b${round}_${flow.kind}_${crypto.randomUUID().slice(0, 8)}`;
			const { body, distinct } = batchBody(items, prefix);
			const stopProbe = lagProbe(running.baseUrl);
			const cpuBefore = cpuSeconds(pid);
			const ms = await post(running.webhookUrl(flow.path), body);
			// n8n answers when the execution ends; it saves the execution before that.
			const cpuMs = (cpuSeconds(pid) - cpuBefore) * 1000;
			const lag = await stopProbe();
			const entry = entryOf(flow.kind);
			entry.ms.push(ms);
			entry.cpuMs.push(cpuMs);
			entry.stallMs.push(lag.stallMs);
			const execution = await lastExecution(flow);
			entry.savedBytes.push(execution.bytes);
			entry.nodeMs.push(execution.nodeMs);
			// The embedded file is n8n's to read: the node's New output holds one item per key it reserved.
			if (EMBEDDED_KINDS.includes(flow.kind) && execution.outputs[0] !== distinct) {
				throw new Error(`${flow.label}: expected ${distinct} new keys, the node's New output has ${execution.outputs[0]}`);
			}
			if (RESERVE_KINDS.includes(flow.kind)) {
				const { rows } = await appQuery<{ n: number }>('SELECT count(*)::int AS n FROM processed_events WHERE key LIKE $1', [
					`%${prefix}_%`,
				]);
				if (rows[0].n !== distinct) throw new Error(`${flow.label}: expected ${distinct} reserved keys, found ${rows[0].n}`);
			}
			if (flow.kind === 'postgres') {
				const { rows } = await appQuery<{ n: number }>('SELECT count(*)::int AS n FROM bench_recipe_events WHERE key LIKE $1', [
					`${prefix}_%`,
				]);
				if (rows[0].n !== distinct) throw new Error(`${flow.label}: expected ${distinct} rows, found ${rows[0].n}`);
			}
		}
		log(`batch round ${round + 1}/${args.batchRounds} done (load ${loadAverage()})`);
	}
	const noop = entryOf('noop');
	const recipe = perFlow.get('postgres');
	// Net per round: the flow's wall time minus the no-op flow's in the same round.
	const netMs = (entry: Entry) => entry.ms.map((ms, i) => ms - noop.ms[i]);
	// Without the recipe's flow (--batch-flows) there is no "vs recipe" column to fill.
	const recipeNet = recipe ? median(netMs(recipe)) : NaN;
	const rows = flows.map((flow) => {
		const entry = entryOf(flow.kind);
		const isNoop = flow.kind === 'noop';
		const net = median(netMs(entry));
		return [
			flow.label,
			fmt(median(entry.ms)),
			isNoop ? '–' : fmt(net),
			isNoop ? '–' : `${fmt(Math.min(...netMs(entry)))}–${fmt(Math.max(...netMs(entry)))}`,
			// A net time at or below zero is the no-op flow's noise (tiny quick-mode batches).
			isNoop ? '–' : net > 0 ? fmt((items / net) * 1000) : 'below noise',
			isNoop || !recipe ? '–' : net > 0 ? `${(recipeNet / net).toFixed(1)}×` : 'below noise',
			fmt(median(entry.cpuMs)),
			isNoop ? '–' : `${(median(entry.cpuMs) / median(noop.cpuMs)).toFixed(2)}×`,
			fmt(median(entry.nodeMs)),
			(median(entry.savedBytes) / 1024 / 1024).toFixed(2),
			fmtMs(Math.max(...entry.stallMs)),
		];
	});
	console.log(
		`\n## Batch: ${fmt(items)} items (${fmt(items / 10)} of them repeats) in one execution, ${args.batchRounds} interleaved rounds\n`,
	);
	printTable(
		[
			'node under test',
			'wall ms',
			'net ms',
			'net min–max',
			'keys/s net',
			'vs per-item recipe',
			'n8n CPU ms',
			'CPU vs no-op',
			'node ms (n8n)',
			'saved execution MB',
			'longest n8n stall ms',
		],
		rows,
	);
	console.log(
		'\nwall: the webhook call (Webhook → Split Out → node; n8n answers when the execution ends); net: minus the no-op flow of the same round.',
	);
	console.log(
		"n8n CPU: n8n's process (user + system, its threads included) from the call to its answer, median; vs no-op: against the no-op flow's.",
	);
	console.log("node ms: the node's own executionTime from n8n's run data; saved execution: size of the execution_data row n8n stored.");
	console.log(
		"longest n8n stall: the slowest GET /healthz answer minus a typical one while the execution ran (n8n's event loop blocked), over all rounds.",
	);
	const bestPostgres = Math.max(
		...flows
			.filter((f) => RESERVE_KINDS.includes(f.kind))
			.map((f) => median(netMs(entryOf(f.kind))))
			.filter((net) => net > 0)
			.map((net) => (items / net) * 1000),
	);
	for (const flow of flows.filter((f) => EMBEDDED_KINDS.includes(f.kind))) {
		const entry = entryOf(flow.kind);
		const net = median(netMs(entry));
		const keysPerSecond = net > 0 ? (items / net) * 1000 : Infinity;
		const vsPostgres = Number.isFinite(bestPostgres)
			? ` (${(keysPerSecond / bestPostgres).toFixed(2)}× the best Postgres flow, ${fmt(bestPostgres)} keys/s)`
			: '';
		console.log(
			`${keysPerSecond >= TARGET.embeddedBatchKeysPerSecond ? 'TARGET HOLDS' : 'TARGET MISSED'}: ${flow.label}: ${net > 0 ? fmt(keysPerSecond) : 'below noise'} keys/s net (target ≥ ${fmt(TARGET.embeddedBatchKeysPerSecond)})${vsPostgres}`,
		);
		const stall = Math.max(...entry.stallMs);
		console.log(
			`${stall <= TARGET.longestStallMs ? 'TARGET HOLDS' : 'TARGET MISSED'}: ${flow.label}: longest n8n event-loop stall ${fmtMs(stall)} ms (target ≤ ${TARGET.longestStallMs} ms)`,
		);
	}
	for (const flow of flows.filter((f) => RESERVE_KINDS.includes(f.kind))) {
		const net = median(netMs(entryOf(flow.kind)));
		if (!(net > 0)) {
			console.log(`NO VERDICT: ${flow.label}: its net time is within the no-op flow's noise at ${fmt(items)} items`);
			continue;
		}
		const keysPerSecond = (items / net) * 1000;
		const vsRecipe = recipeNet / net;
		const ok = keysPerSecond >= TARGET.batchKeysPerSecond && (!recipe || vsRecipe >= TARGET.batchVsRecipe);
		const recipePart = recipe
			? `${vsRecipe.toFixed(1)}× the per-item recipe (target ≥ ${TARGET.batchVsRecipe}×)`
			: 'the per-item recipe not measured (--batch-flows)';
		console.log(
			`${ok ? 'TARGET HOLDS' : 'TARGET MISSED'}: ${flow.label}: ${fmt(keysPerSecond)} keys/s net (target ≥ ${fmt(TARGET.batchKeysPerSecond)}), ${recipePart}`,
		);
	}
}

async function big(ctx: BenchContext, args: Args): Promise<void> {
	const { running, pid, log, appQuery, lastExecution } = ctx;
	const items = args.bigItems;
	const kinds: Record<string, string> = { custom: 'reserve', event: 'reserveAuto', field: 'reserveField' };
	const flow = BATCH_FLOWS.find((f) => f.kind === kinds[args.bigKey]);
	if (!flow) throw new Error(`no batch flow for --big-key ${args.bigKey}`);
	const noopFlow = BATCH_FLOWS[0];
	type BigResult = {
		ms: number;
		before: { rss: number; peak: number };
		maxRss: number;
		after: { rss: number; peak: number };
		execution: { bytes: number; nodeMs: number };
		bodyMb: number;
		distinct?: number;
	};
	const results: Record<string, BigResult> = {};
	for (const f of [noopFlow, flow]) {
		const prefix = `big_${f.kind}_${crypto.randomUUID().slice(0, 8)}`;
		const { body, distinct } = batchBody(items, prefix);
		if (global.gc) global.gc();
		const before = memoryMb(pid);
		const stopSampling = sampleRss(pid);
		const ms = await post(running.webhookUrl(f.path), body);
		const maxRss = stopSampling();
		const execution = await lastExecution(f);
		results[f.kind] = {
			ms,
			before,
			maxRss,
			after: memoryMb(pid),
			execution,
			bodyMb: body.length / 1024 / 1024,
		};
		if (f === flow) {
			const { rows } = await appQuery<{ n: number }>('SELECT count(*)::int AS n FROM processed_events WHERE key LIKE $1', [`%${prefix}_%`]);
			if (rows[0].n !== distinct) throw new Error(`${items}-item execution: expected ${distinct} reserved keys, found ${rows[0].n}`);
			results[f.kind].distinct = distinct;
		}
		log(`${fmt(items)}-item execution through ${f.kind}: ${fmt(ms)} ms`);
	}
	const r = results[flow.kind];
	const n = results.noop;
	console.log(`\n## One ${fmt(items)}-item execution (${fmt(items / 10)} repeats), body ${r.bodyMb.toFixed(1)} MB\n`);
	printTable(
		['flow', 'wall ms', 'node ms (n8n)', 'n8n RSS before MB', 'n8n RSS max during MB', 'added RSS MB', 'saved execution MB'],
		[n, r].map((x, i) => [
			i === 0 ? 'no-op (baseline)' : flow.label,
			fmt(x.ms),
			fmt(x.execution.nodeMs),
			fmt(x.before.rss),
			fmt(x.maxRss),
			fmt(x.maxRss - x.before.rss),
			(x.execution.bytes / 1024 / 1024).toFixed(1),
		]),
	);
	console.log(
		`\n${fmt(r.distinct ?? NaN)} keys reserved in one execution, ${fmt((items / (r.ms - n.ms)) * 1000)} keys/s net; n8n main process peak RSS since start ${fmt(r.after.peak)} MB (machine RAM ${fmt(os.totalmem() / 1024 / 1024)} MB).`,
	);
}

/**
 * Delete Expired Keys inside n8n on `cleanupRows` expired keys (and a tenth as many live ones), per
 * store: the embedded file seeded through the built store by a Node with node:sqlite (n8n keeps
 * it open meanwhile, as another process on the host would), Postgres with one insert; then the
 * cleanup workflow, with n8n's event loop probed throughout.
 */
async function cleanup(ctx: BenchContext, args: Args): Promise<void> {
	const { running, log, appQuery } = ctx;
	const expired = args.cleanupRows;
	const live = Math.floor(expired / 10);
	const file = path.join(running.userFolder, '.n8n', 'storage', 'n8n-nodes-idempotency', 'keys.sqlite');
	const seedStarted = Date.now();
	const seeded = spawnSync(
		sqliteNode({ log }),
		['-r', REGISTER_TS, path.join(__dirname, 'seedEmbedded.ts'), file, String(expired), String(live)],
		{
			cwd: path.join(__dirname, '..', '..'),
			stdio: ['ignore', 'inherit', 'inherit'],
		},
	);
	if (seeded.status !== 0) throw new Error(`seeding ${file} failed (exit ${seeded.status ?? seeded.signal})`);
	await appQuery(
		`INSERT INTO processed_events (key, status, first_seen, last_seen, expires_at, owner_token)
		 SELECT 'cleanup_' || g || '_' || md5(g::text), 'completed', now() - interval '40 days', now() - interval '40 days',
		        CASE WHEN g <= $1 THEN now() - interval '10 days' ELSE now() + interval '30 days' END, gen_random_uuid()
		   FROM generate_series(1, $2::int) AS g`,
		[expired, expired + live],
	);
	await appQuery('VACUUM ANALYZE processed_events').catch(() => {});
	log(
		`cleanup: ${fmt(expired)} expired + ${fmt(live)} live keys seeded on each store in ${((Date.now() - seedStarted) / 1000).toFixed(0)} s`,
	);
	const rows: Array<{
		flow: string;
		deleted: number;
		batches: number | null;
		ms: number;
		rowsPerS: number;
		stallMs: number;
		probeMaxMs: number;
		probes: number;
	}> = [];
	for (const flow of CLEANUP_FLOWS) {
		const stopProbe = lagProbe(running.baseUrl);
		const started = performance.now();
		const res = await fetch(running.webhookUrl(flow.path), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
		const text = await res.text();
		const ms = performance.now() - started;
		const lag = await stopProbe();
		if (res.status !== 200) throw new Error(`${flow.label} answered ${res.status}: ${text.slice(0, 300)}`);
		type CleanupAnswer = { deleted?: number; batches?: number; cleanup?: { deleted?: number; batches?: number } };
		const answer = JSON.parse(text) as CleanupAnswer | CleanupAnswer[];
		const result: CleanupAnswer = (Array.isArray(answer) ? answer[0] : answer) ?? {};
		const deleted = Number(result.deleted ?? result.cleanup?.deleted ?? NaN);
		if (!(deleted >= expired))
			throw new Error(`${flow.label}: deleted ${deleted} of ${expired} expired keys (answer ${text.slice(0, 300)})`);
		rows.push({
			flow: flow.label,
			deleted,
			batches: result.batches ?? result.cleanup?.batches ?? null,
			ms,
			rowsPerS: deleted / (ms / 1000),
			stallMs: lag.stallMs,
			probeMaxMs: lag.maxMs,
			probes: lag.samples,
		});
		log(`${flow.label}: ${fmt(deleted)} deleted in ${fmt(ms)} ms, longest stall ${fmtMs(lag.stallMs)} ms`);
	}
	console.log(`\n## Delete Expired Keys inside n8n: ${fmt(expired)} expired keys among ${fmt(live)} live ones\n`);
	printTable(
		['flow', 'deleted', 'batches', 'wall ms', 'rows/s', 'longest n8n stall ms', '/healthz answers'],
		rows.map((r) => [
			r.flow,
			fmt(r.deleted),
			r.batches === null ? '–' : fmt(r.batches),
			fmt(r.ms),
			fmt(r.rowsPerS),
			fmtMs(r.stallMs),
			fmt(r.probes),
		]),
	);
	const embedded = rows.find((r) => r.flow.includes('Embedded'));
	if (!embedded) return;
	console.log(
		`${embedded.stallMs <= TARGET.longestStallMs ? 'TARGET HOLDS' : 'TARGET MISSED'}: Delete Expired Keys (Embedded) on ${fmt(expired)} expired keys: longest n8n event-loop stall ${fmtMs(embedded.stallMs)} ms (target ≤ ${TARGET.longestStallMs} ms)`,
	);
}

/** Windows of n8n's profile: `window(name, executions, fn)` runs fn and records when it ran, by name. */
function profileRecorder(log: (message: string) => void): {
	windows: ProfileWindow[];
	window: (name: string, executions: number, fn: () => Promise<unknown>) => Promise<void>;
} {
	const windows: ProfileWindow[] = [];
	const window = async (name: string, executions: number, fn: () => Promise<unknown>) => {
		const start = nowMicros();
		await fn();
		windows.push({ name, start, end: nowMicros(), executions });
		log(`profiled: ${name}`);
	};
	return { windows, window };
}

// CPU profile: each workload in its own window of n8n's profile (written when n8n stops).
async function profileWorkloads(ctx: BenchContext, args: Args): Promise<ProfileWindow[]> {
	const { running, log } = ctx;
	const { windows, window } = profileRecorder(log);
	for (const flow of overheadFlows)
		await drive(running.webhookUrl(flow.path), {
			count: 20,
			concurrency: 1,
			tag: 'warm',
			body: flow.body,
		});
	// Interleaved rounds, so background work (n8n's pollers, JIT, GC) spreads over every flow alike.
	const count = args.requests;
	for (let round = 0; round < args.rounds; round++) {
		for (const flow of rotate(overheadFlows, round)) {
			await window(`${flow.label}, c=${args.profileConcurrency}`, count, () =>
				drive(running.webhookUrl(flow.path), {
					count,
					concurrency: args.profileConcurrency,
					tag: 'profile',
					body: flow.body,
				}),
			);
		}
	}
	for (const kind of ['noop', 'reserve', 'reserveAuto', 'reserveField']) {
		const flow = BATCH_FLOWS.find((f) => f.kind === kind);
		if (!flow) throw new Error(`no batch flow ${kind}`);
		await post(running.webhookUrl(flow.path), batchBody(500, `warm_${kind}`).body);
		const { body } = batchBody(args.batchItems, `profile_${kind}_${crypto.randomUUID().slice(0, 8)}`);
		await window(`batch of ${fmt(args.batchItems)}: ${flow.label}`, 1, () => post(running.webhookUrl(flow.path), body));
	}
	return windows;
}

// The trigger's flows instead: where n8n's time goes for a new event, a duplicate and a forgery through each.
async function profileTrigger(ctx: BenchContext & { api: Api }, args: Args): Promise<ProfileWindow[]> {
	const { windows, window } = profileRecorder(ctx.log);
	const flows = triggerFlowsOf(args);
	await triggerProfileWindows(ctx, { count: 10, concurrency: 1, flows }, async (name, n, fn) => await fn(), { stripeEvent });
	await triggerProfileWindows(ctx, { count: args.requests, concurrency: args.profileConcurrency, flows }, window, { stripeEvent });
	return windows;
}

// At Once's answers instead: where n8n's time goes while new events arrive behind a 10 s step, beside the floor.
async function profileAtOnce(ctx: BenchContext & { api: Api }, args: Args): Promise<ProfileWindow[]> {
	const { windows, window } = profileRecorder(ctx.log);
	await atOnceProfileWindows(ctx, { count: 6, concurrency: 1 }, async (name, n, fn) => await fn(), { stripeEvent });
	await atOnceProfileWindows(ctx, { count: args.requests, concurrency: args.profileConcurrency }, window, { stripeEvent });
	return windows;
}

function printProfile(summaries: ProfileSummary[]): void {
	console.log('\n## CPU profile of the n8n main process (self time, ms per execution; idle excluded)\n');
	const categories = [...new Set(summaries.flatMap((s) => s.categories.map((c) => c.name)))];
	const cell = (s: ProfileSummary, name: string) => fmtMs(s.categories.find((c) => c.name === name)?.msPerExecution ?? 0, 2);
	printTable(
		['category', ...summaries.map((s) => s.name)],
		[
			...categories.map((name) => [name, ...summaries.map((s) => cell(s, name))]),
			['total', ...summaries.map((s) => fmtMs(s.cpuMsPerExecution, 2))],
		],
	);
	console.log('\n### Total time of call paths (the frame and what it calls; ms per execution)\n');
	const inclusiveNames = summaries[0]?.inclusive.map((entry) => entry.name) ?? [];
	printTable(
		['call path', ...summaries.map((s) => s.name)],
		inclusiveNames.map((name) => [
			name,
			...summaries.map((s) => fmtMs(s.inclusive.find((entry) => entry.name === name)?.msPerExecution ?? NaN, 2)),
		]),
	);
	for (const s of summaries) {
		console.log(`\n### Top functions: ${s.name}\n`);
		printTable(
			['function (self time)', 'ms/exec', 'share'],
			s.functions.map((f) => [f.name, fmtMs(f.msPerExecution, 2), `${(f.share * 100).toFixed(1)} %`]),
		);
	}
}

// ---------------------------------------------------------------------------------------------

/** The recorded runs --save writes, by part: their id and title in bench/results. */
const SAVED_RUNS = {
	trigger: {
		id: 'trigger-n8n',
		title: 'The Idempotent Webhook trigger inside n8n, beside the webhook template on each store, a bare webhook flow and a floor trigger',
	},
	atOnce: {
		id: 'at-once-n8n',
		title:
			"The Idempotent Webhook trigger answering At Once with a 10 s step, beside n8n's Webhook node answering Immediately and a floor trigger",
	},
};

/** A part's rows as a bench/results file; the machine's id and the run's notes are filled in by hand. */
function saveRun(
	part: keyof typeof SAVED_RUNS,
	args: Args & { save: string },
	rows: TriggerRow[] | AtOnceRow[],
	{ runStarted, n8nVersion, loadAtStart }: { runStarted: Date; n8nVersion: string; loadAtStart: string },
): void {
	const hhmm = (date: Date) => date.toISOString().slice(11, 16);
	const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
	const run = {
		...SAVED_RUNS[part],
		command: `npm run bench:n8n -- ${process.argv
			.slice(2)
			.filter((arg, i, all) => arg !== '--save' && all[i - 1] !== '--save')
			.join(' ')}`,
		date: runStarted.toISOString().slice(0, 10),
		time: `${hhmm(runStarted)}–${hhmm(new Date())} UTC`,
		commit,
		n8n: n8nVersion,
		load: `${loadAtStart} at start, ${loadAverage()} at end`,
		quiet: false,
		machine: 'shared-2core-2026-11',
		rows,
	};
	fs.writeFileSync(args.save, `${JSON.stringify(run, null, 2)}\n`);
	console.log(`\nrows saved to ${args.save}`);
}

async function main(): Promise<number> {
	const args = parseArgs(process.argv.slice(2));
	const { overheadFlows: only } = args;
	if (only) overheadFlows = OVERHEAD_FLOWS.filter((flow, index) => index === 0 || only.includes(flow.path));
	const started = Date.now();
	const log = (line: string) => process.stderr.write(`[bench:n8n ${((Date.now() - started) / 1000).toFixed(0)}s] ${line}\n`);
	const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'idempotency-bench-n8n-'));
	let running: Running | null | undefined;
	let exitCode = 0;
	let profiling: { env: Record<string, string>; dir: string } | undefined;
	const withTrigger = args.only.includes('trigger');
	const withAtOnce = args.only.includes('atOnce');
	if (withTrigger && withAtOnce && args.save) throw new Error('--save records one part: --only trigger or --only atOnce');
	let loadAtStart = '';
	// "Your API" for the trigger parts' business steps, in this process (the load has its own).
	const api: Api | null = withTrigger || withAtOnce ? await startSink() : null;
	try {
		if (args.profile)
			profiling = profilingEnv({
				nodeBin: stack.ensureN8n({ log }).nodeBin,
				workDir,
			});
		console.log(`# n8n benchmark ${new Date().toISOString()}${args.quick ? ' (quick)' : ''}`);
		loadAtStart = loadAverage();
		console.log(
			`machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), ${fmt(os.totalmem() / 1024 / 1024)} MB; load at start ${loadAverage()}`,
		);
		const live: Running = await stack.startStack({
			workDir,
			recreateDbs: true,
			dbNames: { n8n: 'n8n_bench', app: 'idempotency_bench' },
			setupSql: async (client, ctx) => {
				await stack.prepareTemplateTables(client, ctx);
				await client.query(RECIPE_TABLE_DDL);
			},
			credentials: (c) => [
				...stack.templateCredentials(c),
				{ ...UNNAMED_CREDENTIAL_DEF, data: { ...stack.idempotencyCredentialData(c.app), preparedStatements: false } },
			],
			// Spread into plain objects: startStack's WorkflowJson takes further members (an index
			// signature), which an interface type does not match.
			workflows: [
				...overheadWorkflows(),
				...embeddedOverheadWorkflows(),
				...batchWorkflows(),
				...cleanupWorkflows(),
				...(api && withTrigger ? triggerWorkflows({ apiUrl: api.url }) : []),
				...(api && withAtOnce
					? triggerWorkflows({ apiUrl: api.url, flows: AT_ONCE_FLOWS.filter((flow) => !withTrigger || flow.role !== 'floor') })
					: []),
			].map((json) => ({
				json,
				publish: true,
			})),
			extraPackages: withTrigger || withAtOnce ? [FLOOR_PACKAGE_DIR] : [],
			readyWebhooks: [
				...OVERHEAD_FLOWS,
				...BATCH_FLOWS,
				...CLEANUP_FLOWS,
				...(withTrigger ? triggerFlowsOf(args) : []),
				...(withAtOnce ? AT_ONCE_FLOWS : []),
			].map((flow) => flow.path),
			env: { ...args.n8nEnv, ...profiling?.env },
			log,
		});
		running = live;
		const pid = findN8nPid(live.workDir);
		if (!pid) throw new Error('could not find the n8n process of the stack');
		if (!live.tarball) throw new Error('the stack installed no package tarball');
		const n8nVersion = (
			JSON.parse(fs.readFileSync(path.join(live.n8nDir, 'node_modules', 'n8n', 'package.json'), 'utf8')) as { version: string }
		).version;
		const pgVersion: string = await stack.withClient(
			live.appUrl,
			async (c: PgClient) => (await c.query<{ server_version: string }>('show server_version')).rows[0].server_version,
		);
		console.log(
			`n8n ${n8nVersion} (pid ${pid}), Postgres ${pgVersion} (embedded, shared by n8n and the keys), package ${path.basename(live.tarball)}`,
		);
		const { parse } = flattedOf(live);
		const ctx: BenchContext = {
			running: live,
			pid,
			log,
			appQuery: (sql, params) => stack.withClient(live.appUrl, (client: PgClient) => client.query(sql, params)),
			/** The newest execution of a flow's workflow: stored size and the node under test's own time. */
			lastExecution: ({ id: workflowId, nodeName }) =>
				stack.withClient(live.n8nDbUrl, async (client: PgClient) => {
					const { rows } = await client.query<{ id: string; status: string; data: string }>(
						`SELECT e.id, e.status, d.data FROM execution_entity e JOIN execution_data d ON d."executionId" = e.id
						  WHERE e."workflowId" = $1 ORDER BY e.id DESC LIMIT 1`,
						[workflowId],
					);
					if (!rows[0]) throw new Error(`no execution of ${workflowId} stored`);
					if (rows[0].status !== 'success') throw new Error(`execution ${rows[0].id} of ${workflowId} ended ${rows[0].status}`);
					const runData = parse(rows[0].data).resultData?.runData ?? {};
					const nodeRuns = runData[nodeName];
					if (!nodeRuns) throw new Error(`the newest execution of ${workflowId} did not run ${nodeName}`);
					return {
						bytes: Buffer.byteLength(rows[0].data),
						nodeMs: nodeRuns[0].executionTime,
						outputs: (nodeRuns[0].data?.main ?? []).map((output) => output?.length ?? 0),
					};
				}),
		};
		if (profiling) {
			const windows = !api
				? await profileWorkloads(ctx, args)
				: withAtOnce
					? await profileAtOnce({ ...ctx, api }, args)
					: await profileTrigger({ ...ctx, api }, args);
			if (!api) await packageNodeTimes(ctx);
			await live.stop(); // n8n writes the profile as it exits
			running = null;
			const file = fs.readdirSync(profiling.dir).find((name) => name.endsWith('.cpuprofile'));
			if (!file) throw new Error(`n8n wrote no CPU profile into ${profiling.dir}`);
			const kept = path.join(os.tmpdir(), `n8n-bench-${Date.now()}.cpuprofile`);
			fs.copyFileSync(path.join(profiling.dir, file), kept);
			fs.writeFileSync(kept.replace(/\.cpuprofile$/, '.windows.json'), JSON.stringify(windows));
			printProfile(summarise(kept, windows));
			console.log(`\nprofile kept for Chrome DevTools: ${kept}`);
		} else {
			if (args.only.includes('overhead')) await overhead(ctx, args);
			if (args.only.includes('batch')) await batch(ctx, args);
			if (args.only.includes('big')) await big(ctx, args);
			if (args.only.includes('cleanup')) await cleanup(ctx, args);
			const { save } = args;
			if (api && withTrigger) {
				const runStarted = new Date();
				const rows = await triggerBench({ ...ctx, api }, args, { stripeEvent });
				if (save) saveRun('trigger', { ...args, save }, rows, { runStarted, n8nVersion, loadAtStart });
			}
			if (api && withAtOnce) {
				const runStarted = new Date();
				const rows = await atOnceBench({ ...ctx, api }, args, { stripeEvent });
				if (save) saveRun('atOnce', { ...args, save }, rows, { runStarted, n8nVersion, loadAtStart });
			}
		}
		console.log(`\nload at end ${loadAverage()}; total ${((Date.now() - started) / 1000).toFixed(0)} s`);
	} catch (error) {
		exitCode = 1;
		console.error(`bench:n8n failed: ${error instanceof Error ? error.message : String(error)}`);
		if (running) console.error(`n8n log: ${running.logFile}`);
	} finally {
		if (running) await running.stop();
		await api?.close();
		if (args.keep || exitCode !== 0) console.error(`work folder kept: ${workDir}`);
		else fs.rmSync(workDir, { recursive: true, force: true });
	}
	return exitCode;
}

main().then((code) => process.exit(code));
