// The Idempotent Webhook trigger inside n8n, side by side with what it replaces and with n8n's floor
// for an answer without an execution (bench/n8n/run.ts --only trigger). Six flows in one n8n, each
// with one business step (an HTTP call to an API of this process):
//
//   trigger            templates/idempotent-webhook-trigger.json (Embedded)
//   template           templates/idempotent-webhook-embedded.json (Webhook → Verify → Reserve → Settle → Respond)
//   triggerPostgres    templates/idempotent-webhook-trigger-postgres.json
//   templatePostgres   the embedded template with Store: Postgres on Reserve and Settle
//   bare               Webhook → the same step → Respond to Webhook, checking nothing (new events only)
//   floor              a trigger of its own package that answers {} in webhook() (bench/n8n/floor-trigger/)
//
// Four kinds of delivery, each round and concurrency in turn, the flows' order rotating: new events,
// their duplicates (the same bodies, signed again as a provider's retry), forgeries (signed with
// another secret) and copies of events whose first delivery is still running (the API holds its
// call). Each trigger is compared with the template on its own store. The load comes from a process
// of its own (load.ts) on 127.0.0.1; the executions each kind created are counted in n8n's database.
import { fork } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import type { Client as PgClient } from 'pg';

import * as stack from '../../test/support/stack/n8nStack';
import { triggerKey } from '../../test/support/e2e/trigger';
import { median, percentile, fmt, fmtRatio, fmtMs, printTable, rotate, loadAverage } from '../stats';
import type { LoadJob, LoadResult } from './load';
import { cpuSeconds } from './proc';
import type { Api, Args, BenchContext, Running, StripeEvent } from './run';
import { TRIGGER_FLOWS, type TriggerFlow, type TriggerRole } from './workflows';

// The load is TypeScript: its process loads the hook that transpiles it.
const REGISTER_TS = path.join(__dirname, '..', '..', 'test', 'support', 'register-ts.js');

type Kind = 'new' | 'duplicate' | 'forgery' | 'inProgress';
/** What a delivery sends: its body and headers. */
type Delivery = LoadJob['requests'][number];
type MakeEvent = (tag: string) => StripeEvent;

/** One flow, one kind, one concurrency, over the rounds. */
interface KindResult {
	latencies: number[];
	perSecond: number[];
	p50: number[];
	executions: number;
	requests: number;
	cpuMs: number[];
}

/** A row of the trigger run, as bench/results keeps it (bench/report.ts reads it). */
export interface TriggerRow {
	kind: Kind;
	role: TriggerRole;
	flow: string;
	/** Where the flow keeps its keys; null for the bare flow and the floor. */
	store: 'embedded' | 'postgres' | null;
	clients: number;
	reqPerS: number;
	vsFloor: number;
	vsFloorMin: number | null;
	vsFloorMax: number | null;
	/** Against the template on the same store; null for the bare flow and the floor. */
	vsTemplate: number | null;
	vsTemplateMin: number | null;
	vsTemplateMax: number | null;
	/** New events: against the bare flow doing the same step; null otherwise. */
	vsBare: number | null;
	p50Ms: number;
	p99Ms: number;
	executionsPerRequest: number;
	cpuMsPerRequest: number;
}

const TARGET = { executionsPerDuplicate: 0, duplicateVsFloor: 0.9, newVsTemplate: 1, newVsBare: 0.9 };
const KINDS: Array<{ kind: Kind; label: string }> = [
	{ kind: 'new', label: 'new events' },
	{ kind: 'duplicate', label: 'duplicates (a completed event again, signed anew)' },
	{ kind: 'forgery', label: 'forgeries (signed with another secret)' },
	{ kind: 'inProgress', label: 'copies in progress (the first delivery still running)' },
];
// What each flow must answer to each kind: a wrong answer fails the run (it counts, it does not just time).
const EXPECTED: Record<TriggerRole, Partial<Record<Kind, [number, string | null]>>> = {
	trigger: { new: [200, 'new'], duplicate: [200, 'duplicate'], forgery: [401, 'invalid_signature'], inProgress: [409, 'in_progress'] },
	template: { new: [200, 'new'], duplicate: [200, 'duplicate'], forgery: [401, 'invalid_signature'], inProgress: [409, 'in_progress'] },
	// Checks nothing: what the step costs without idempotency, for new events.
	bare: { new: [200, null] },
	floor: { new: [200, null], duplicate: [200, null], forgery: [200, null], inProgress: [200, null] },
};
/** Whether a flow takes part in a kind (the bare flow: new events only). */
const runsKind = (flow: TriggerFlow, kind: Kind) => EXPECTED[flow.role][kind] !== undefined;
// Events whose first delivery is held at the API during the in-progress kind; their copies cycle through them.
const HELD_EVENTS = 4;

/** The Idempotency-Key an event's business step sends: the trigger's key is its workflow's, Reserve's the event's. */
function keyAtApi(flow: TriggerFlow, event: StripeEvent): string {
	return flow.role === 'trigger' ? triggerKey(flow.id, event.id) : `evt:${event.id}`;
}

/** The load process: one job at a time, answered over IPC. */
export function startLoad(): { run: (job: LoadJob) => Promise<LoadResult>; stop: () => boolean } {
	const child = fork(path.join(__dirname, 'load.ts'), [], {
		stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
		execArgv: ['-r', REGISTER_TS],
	});
	return {
		run: (job) =>
			new Promise((resolve, reject) => {
				child.once('message', (message: LoadResult | { error: string }) =>
					'error' in message ? reject(new Error(`load: ${message.error}`)) : resolve(message),
				);
				child.send(job);
			}),
		stop: () => child.kill(),
	};
}

export function signed(event: StripeEvent, { secret }: { secret?: string } = {}): Delivery {
	const body = JSON.stringify(event);
	return { body, headers: { 'content-type': 'application/json', 'stripe-signature': stack.stripeSignature(body, { secret }) } };
}

async function executionCount(running: Running, workflowId: string): Promise<number> {
	return await stack.withClient(running.n8nDbUrl, async (client: PgClient) => {
		const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM execution_entity WHERE "workflowId" = $1', [
			workflowId,
		]);
		return rows[0].n;
	});
}

/** The count once it stopped moving (n8n writes an execution's row as it starts; a short settle covers the last ones). */
async function settledExecutionCount(running: Running, workflowId: string): Promise<number> {
	let last = await executionCount(running, workflowId);
	for (;;) {
		await stack.sleep(400);
		const now = await executionCount(running, workflowId);
		if (now === last) return now;
		last = now;
	}
}

/**
 * Runs the trigger benchmark on a started stack (`ctx` of bench/n8n/run.ts, with `api`: the sink the
 * business steps call). Prints the tables and verdicts; returns the rows for bench/results.
 */
export async function triggerBench(
	ctx: BenchContext & { api: Api },
	args: Args,
	{ stripeEvent }: { stripeEvent: (id: string) => StripeEvent },
): Promise<TriggerRow[]> {
	const { running, pid, log, api } = ctx;
	const load = startLoad();
	const results = new Map<string, KindResult>(); // `${kind}|${flow.key}@${c}` → { latencies, perSecond, p50, executions, requests, cpuMs }
	const concurrencies = [1, 8];
	const count = args.requests;
	const event: MakeEvent = (tag) => stripeEvent(`evt_${tag}_${crypto.randomUUID().replace(/-/g, '').slice(0, 20)}`);
	const flows = triggerFlowsOf(args);
	try {
		// Warm-up: each flow's code paths, the store file, the API connection.
		for (const flow of flows) {
			const events = Array.from({ length: 3 }, () => event('warm'));
			for (const requests of [events.map((e) => signed(e)), events.map((e) => signed(e))]) {
				await load.run({ url: running.webhookUrl(flow.path), requests, concurrency: 1 });
			}
		}
		for (let round = 0; round < args.rounds; round++) {
			for (const concurrency of concurrencies) {
				const delivered = new Map<string, StripeEvent[]>(); // flow key → the events its new kind delivered (their duplicates come next)
				for (const { kind } of KINDS) {
					for (const flow of rotate(flows, round + concurrency).filter((f) => runsKind(f, kind))) {
						const result = await oneKind({ running, api, load, flow, kind, count, concurrency, delivered, event, pid });
						const key = `${kind}|${flow.key}@${concurrency}`;
						const entry = results.get(key) ?? { latencies: [], perSecond: [], p50: [], executions: 0, requests: 0, cpuMs: [] };
						entry.latencies.push(...result.latencies);
						entry.perSecond.push(result.perSecond);
						entry.p50.push(percentile(result.latencies, 50));
						entry.executions += result.executions;
						entry.requests += count;
						entry.cpuMs.push(result.cpuMs);
						results.set(key, entry);
					}
				}
			}
			log(`trigger round ${round + 1}/${args.rounds} done (load ${loadAverage()})`);
		}
	} finally {
		load.stop();
	}
	return report(results, { args, concurrencies, flows });
}

/** The flows of this run: all, or those --trigger-flows names (the floor always, the templates of the triggers' stores). */
export function triggerFlowsOf(args: Pick<Args, 'triggerFlows'>): TriggerFlow[] {
	const named = args.triggerFlows;
	if (!named) return TRIGGER_FLOWS;
	const chosen = TRIGGER_FLOWS.filter(
		(flow) =>
			named.includes(flow.key) ||
			flow.role === 'floor' ||
			(flow.role === 'template' &&
				TRIGGER_FLOWS.some((other) => other.role === 'trigger' && other.store === flow.store && named.includes(other.key))),
	);
	return chosen;
}

async function oneKind({
	running,
	api,
	load,
	flow,
	kind,
	count,
	concurrency,
	delivered,
	event,
	pid,
}: {
	running: Running;
	api: Api;
	load: ReturnType<typeof startLoad>;
	flow: TriggerFlow;
	kind: Kind;
	count: number;
	concurrency: number;
	delivered: Map<string, StripeEvent[]>;
	event: MakeEvent;
	pid: number;
}): Promise<{ latencies: number[]; perSecond: number; executions: number; cpuMs: number }> {
	const url = running.webhookUrl(flow.path);
	let requests: Delivery[];
	let held: Array<Promise<{ status: number; text: string }>> = [];
	if (kind === 'new') {
		const events = Array.from({ length: count }, () => event(flow.key));
		delivered.set(flow.key, events);
		requests = events.map((e) => signed(e));
	} else if (kind === 'duplicate') {
		requests = (delivered.get(flow.key) ?? []).map((e) => signed(e));
	} else if (kind === 'forgery') {
		requests = Array.from({ length: count }, () => signed(event('forged'), { secret: 'whsec_not_the_endpoint_secret' }));
	} else {
		const events = Array.from({ length: HELD_EVENTS }, () => event('held'));
		if (flow.role !== 'floor') {
			// The first deliveries run until the API answers them: their copies meet the key in progress.
			const arrived = events.map((e) => api.holdNext(keyAtApi(flow, e)));
			held = events.map((e) => {
				const first = signed(e);
				return fetch(url, { method: 'POST', headers: first.headers, body: first.body }).then(async (res) => ({
					status: res.status,
					text: await res.text(),
				}));
			});
			await withTimeout(Promise.all(arrived), 60000, `${flow.key}: the first deliveries never reached the API`);
		}
		requests = Array.from({ length: count }, (_, i) => signed(events[i % events.length]));
	}
	const before = await settledExecutionCount(running, flow.id);
	const cpuBefore = cpuSeconds(pid);
	const result = await load.run({ url, requests, concurrency });
	const cpuMs = ((cpuSeconds(pid) - cpuBefore) * 1000) / count;
	const executions = (await settledExecutionCount(running, flow.id)) - before;
	if (held.length > 0) {
		const events = requests.slice(0, HELD_EVENTS).map((r) => JSON.parse(r.body) as StripeEvent);
		for (const e of events) api.answerHeld(keyAtApi(flow, e));
		const firsts = await withTimeout(Promise.all(held), 60000, `${flow.key}: the held first deliveries were never answered`);
		const failed = firsts.filter((answer) => answer.status !== 200);
		if (failed.length > 0)
			throw new Error(`${flow.key}: a held first delivery answered ${failed[0].status}: ${failed[0].text.slice(0, 200)}`);
	}
	const expected = EXPECTED[flow.role][kind];
	if (!expected) throw new Error(`${flow.label} does not take ${kind}`);
	const [status, outcome] = expected;
	const wrong = result.statuses
		.map((s, i): [number, string | null] => [s, result.outcomes[i]])
		.filter(([s, o]) => s !== status || (outcome !== null && o !== outcome));
	if (wrong.length > 0)
		throw new Error(
			`${flow.label}, ${kind}: ${wrong.length}/${count} answers were not ${status} ${outcome ?? ''} (first: ${wrong[0].join(' ')})`,
		);
	return { latencies: result.latencies, perSecond: count / result.seconds, executions, cpuMs };
}

export async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	try {
		return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]);
	} finally {
		clearTimeout(timer);
	}
}

function report(
	results: Map<string, KindResult>,
	{ args, concurrencies, flows }: { args: Args; concurrencies: number[]; flows: TriggerFlow[] },
): TriggerRow[] {
	const rows: TriggerRow[] = [];
	const verdicts: string[] = [];
	const resultOf = (kind: Kind, flowKey: string, concurrency: number): KindResult | undefined =>
		results.get(`${kind}|${flowKey}@${concurrency}`);
	const floorFlow = flows.find((flow) => flow.role === 'floor');
	const bareFlow = flows.find((flow) => flow.role === 'bare');
	// Each round pairs the flows within seconds of each other: per-round ratios, then the median (and their spread).
	const ratios = (r: KindResult, base: KindResult | undefined) => (base ? r.perSecond.map((x, i) => x / base.perSecond[i]) : []);
	const medianOf = (values: number[], digits: number) => (values.length === 0 ? null : round(median(values), digits));
	const extreme = (values: number[], pickOne: (...v: number[]) => number) => (values.length === 0 ? null : round(pickOne(...values), 2));
	for (const { kind, label } of KINDS) {
		const table: string[][] = [];
		for (const concurrency of concurrencies) {
			const floor = floorFlow && resultOf(kind, floorFlow.key, concurrency);
			const bare = bareFlow && resultOf(kind, bareFlow.key, concurrency);
			for (const flow of flows) {
				const r = resultOf(kind, flow.key, concurrency);
				if (!r) continue;
				const templateFlow =
					flow.role === 'trigger' || flow.role === 'template'
						? flows.find((other) => other.role === 'template' && other.store === flow.store)
						: undefined;
				const template = templateFlow && resultOf(kind, templateFlow.key, concurrency);
				const vsFloor = flow.role === 'floor' ? [] : ratios(r, floor);
				const vsTemplate = flow.role === 'template' ? [] : ratios(r, template);
				const vsBare = flow.role === 'bare' || flow.role === 'floor' ? [] : ratios(r, bare);
				const row: TriggerRow = {
					kind,
					role: flow.role,
					flow: flow.label,
					store: flow.store,
					clients: concurrency,
					reqPerS: round(median(r.perSecond), 1),
					vsFloor: flow.role === 'floor' ? 1 : (medianOf(vsFloor, 3) ?? NaN),
					vsFloorMin: extreme(vsFloor, Math.min),
					vsFloorMax: extreme(vsFloor, Math.max),
					vsTemplate: flow.role === 'template' ? 1 : medianOf(vsTemplate, 2),
					vsTemplateMin: extreme(vsTemplate, Math.min),
					vsTemplateMax: extreme(vsTemplate, Math.max),
					vsBare: medianOf(vsBare, 2),
					p50Ms: round(percentile(r.latencies, 50), 1),
					p99Ms: round(percentile(r.latencies, 99), 1),
					executionsPerRequest: round(r.executions / r.requests, 3),
					cpuMsPerRequest: round(median(r.cpuMs), 1),
				};
				rows.push(row);
				const withRange = (value: number | null, min: number | null, max: number | null, digits: number) =>
					value === null
						? '–'
						: min === null
							? fmtRatio(value, digits)
							: `${fmtRatio(value, digits)} (${fmtRatio(min, 2)}–${fmtRatio(max ?? NaN, 2)})`;
				table.push([
					flow.label,
					`c=${concurrency}`,
					row.reqPerS.toFixed(1),
					withRange(row.vsFloor, row.vsFloorMin, row.vsFloorMax, 3),
					withRange(row.vsTemplate, row.vsTemplateMin, row.vsTemplateMax, 2),
					row.vsBare === null ? '–' : fmtRatio(row.vsBare, 2),
					fmtMs(row.p50Ms),
					fmtMs(row.p99Ms),
					String(row.executionsPerRequest),
					fmtMs(row.cpuMsPerRequest),
				]);
				if (flow.role !== 'trigger') continue;
				const name = `trigger (${flow.store}), ${kind}, c=${concurrency}`;
				if (kind !== 'new') {
					const ok = r.executions === TARGET.executionsPerDuplicate;
					verdicts.push(
						`${ok ? 'TARGET HOLDS' : 'TARGET MISSED'}: ${name}: ${fmt(r.executions)} executions for ${fmt(r.requests)} requests (target ${TARGET.executionsPerDuplicate})`,
					);
					verdicts.push(
						`${row.vsFloor >= TARGET.duplicateVsFloor ? 'TARGET HOLDS' : 'TARGET MISSED'}: ${name}: ${fmtRatio(row.vsFloor)} the floor's throughput (target ≥ ${TARGET.duplicateVsFloor})`,
					);
				} else {
					const templateCpu = template ? median(template.cpuMs) : NaN;
					verdicts.push(
						`${(row.vsTemplate ?? 0) >= TARGET.newVsTemplate ? 'TARGET HOLDS' : 'TARGET MISSED'}: ${name}: ${fmtRatio(row.vsTemplate ?? NaN, 2)} the template's throughput (target ≥ ${TARGET.newVsTemplate}); n8n CPU ${fmtMs(row.cpuMsPerRequest)} vs ${fmtMs(templateCpu)} ms per event`,
					);
					if (row.vsBare !== null)
						verdicts.push(
							`${row.vsBare >= TARGET.newVsBare ? 'TARGET HOLDS' : 'TARGET MISSED'}: ${name}: ${fmtRatio(row.vsBare, 2)} the bare flow's throughput (target ≥ ${TARGET.newVsBare})`,
						);
				}
			}
		}
		console.log(
			`\n## Idempotent Webhook trigger: ${label} (${args.rounds} interleaved rounds × ${args.requests} requests per flow and concurrency)\n`,
		);
		printTable(
			[
				'flow',
				'clients',
				'req/s (median)',
				'vs floor (min–max)',
				'vs template, same store (min–max)',
				'vs bare',
				'p50 ms',
				'p99 ms',
				'executions per request',
				'n8n CPU ms/request',
			],
			table,
		);
	}
	console.log(
		'\nvs floor / vs template / vs bare: median of per-round throughput ratios; p50/p99: all rounds pooled; executions: rows n8n added to execution_entity per request.',
	);
	for (const line of verdicts) console.log(line);
	return rows;
}

export function round(x: number, digits: number): number {
	const scale = 10 ** digits;
	return Math.round(x * scale) / scale;
}

/**
 * For `--profile --only trigger`: per flow, `count` new events, then their duplicates and as many
 * forgeries, each kind in a window of n8n's CPU profile (`window(name, requests, fn)`).
 */
export async function triggerProfileWindows(
	ctx: Pick<BenchContext, 'running'>,
	{ count, concurrency, flows }: { count: number; concurrency: number; flows: TriggerFlow[] },
	window: (name: string, executions: number, fn: () => Promise<unknown>) => Promise<unknown>,
	{ stripeEvent }: { stripeEvent: (id: string) => StripeEvent },
): Promise<void> {
	const { running } = ctx;
	const load = startLoad();
	const event: MakeEvent = (tag) => stripeEvent(`evt_${tag}_${crypto.randomUUID().replace(/-/g, '').slice(0, 20)}`);
	try {
		for (const flow of flows) {
			const url = running.webhookUrl(flow.path);
			const events = Array.from({ length: count }, () => event(flow.key));
			await window(`${flow.key}: new, c=${concurrency}`, count, () =>
				load.run({ url, requests: events.map((e) => signed(e)), concurrency }),
			);
			if (!runsKind(flow, 'duplicate')) continue;
			await window(`${flow.key}: duplicate, c=${concurrency}`, count, () =>
				load.run({ url, requests: events.map((e) => signed(e)), concurrency }),
			);
			const forged = Array.from({ length: count }, () => signed(event('forged'), { secret: 'whsec_not_the_endpoint_secret' }));
			await window(`${flow.key}: forgery, c=${concurrency}`, count, () => load.run({ url, requests: forged, concurrency }));
		}
	} finally {
		load.stop();
	}
}
