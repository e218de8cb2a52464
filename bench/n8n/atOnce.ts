// The Idempotent Webhook trigger answering At Once, beside the floor trigger (bench/n8n/run.ts
// --only atOnce): how long a sender waits for its 2xx when the workflow behind it takes 10 s. Three
// flows in one n8n, At Once on the Embedded store:
//
//   atOnce       templates/idempotent-webhook-trigger.json at its newest version, Respond: At Once;
//                its business step calls an API of this process that works 10 s before it answers
//   immediately  n8n's Webhook node, Respond: Immediately, then the same step: n8n's own answer at
//                once, which starts the same execution but keeps nothing (a failed run is lost)
//   floor        a trigger of its own package that answers {} in webhook() and starts nothing
//                (bench/n8n/floor-trigger/): n8n's own cost of an answer
//
// Each round and load sends each flow, their order rotating, `--requests` new events from the load
// process (bench/n8n/load.ts). The loads: 1 and 8 clients that send their next event as soon as the
// last is answered (8 such clients keep n8n busy: their p50 is mostly queueing), and bursts of 8
// events at once, 1 s apart (a provider delivering a batch of events). The runs go on while the
// deliveries arrive (each holds a call to the API for 10 s); before the next flow is sent they all
// end, and each event must have had exactly one effect. The acceptance: p99 under 250 ms at 8
// concurrent and at most 1.2× the floor's p99.
import crypto from 'node:crypto';

import { percentile, median, fmtMs, fmtRatio, printTable, rotate, loadAverage } from '../stats';
import { cpuSeconds } from './proc';
import type { Api, Args, BenchContext, StripeEvent } from './run';
import { round, signed, startLoad, withTimeout } from './trigger';
import { AT_ONCE_FLOWS, IMMEDIATELY_KEY_PREFIX, type AtOnceFlow } from './workflows';

/** How long the business step's call works at the API before it answers. */
const STEP_MS = 10_000;
const TARGET = { p99AtEightMs: 250, p99VsFloor: 1.2 };
/** A burst's events are sent at once; the next burst after this pause. */
const BURST = { events: 8, pauseMs: 1000 };
/** How the events are sent: `clients` senders that never pause, or bursts. */
interface Load {
	label: string;
	clients: number;
	bursts: boolean;
}
const LOADS: Load[] = [
	{ label: '1 client', clients: 1, bursts: false },
	{ label: '8 clients', clients: 8, bursts: false },
	{ label: `bursts of ${BURST.events}, ${BURST.pauseMs / 1000} s apart`, clients: BURST.events, bursts: true },
];

/** A row of the At Once run, as bench/results keeps it (id at-once-n8n; bench/report.ts reads it). */
export interface AtOnceRow {
	flow: string;
	/** How the events were sent (LOADS). */
	load: string;
	clients: number;
	reqPerS: number;
	p50Ms: number;
	p99Ms: number;
	/** p50 and p99 over the floor's at the same clients; 1 for the floor. */
	p50VsFloor: number;
	p99VsFloor: number;
	/** p99 over n8n's Webhook node answering Immediately, at the same clients; 1 for it, null for the floor. */
	p99VsImmediately: number | null;
	/** n8n's CPU per request while the flow was sent, its runs (10 s each) to their end included. */
	cpuMsPerRequest: number;
	/** Effects at the API per event (must be 1); null for the floor, which runs nothing. */
	effectsPerEvent: number | null;
}

/** One flow at one concurrency, over the rounds. */
interface Pooled {
	latencies: number[];
	perSecond: number[];
	cpuMs: number[];
	effects: number;
	events: number;
}

/** The key an event's step sends the API: the trigger's (version 2 on: each workflow's keys apart), or the Immediately flow's. */
const keyOf = (flow: AtOnceFlow, eventId: string) =>
	flow.role === 'immediately' ? `${IMMEDIATELY_KEY_PREFIX}${eventId}` : `wf:${flow.id}:evt:${eventId}`;
/** The flows that start a run of the 10 s step. */
const runs = (flow: AtOnceFlow) => flow.role !== 'floor';

/**
 * Runs the At Once part on a started stack (`ctx` of bench/n8n/run.ts, with `api`: the sink the
 * business step calls). Prints the table and the verdicts; returns the rows for bench/results.
 */
export async function atOnceBench(
	ctx: BenchContext & { api: Api },
	args: Args,
	{ stripeEvent }: { stripeEvent: (id: string) => StripeEvent },
): Promise<AtOnceRow[]> {
	const { running, pid, log, api } = ctx;
	const load = startLoad();
	const pooled = new Map<string, Pooled>(); // `${flow.key}@${load.label}` → what its rounds measured
	const event = (tag: string) => stripeEvent(`evt_${tag}_${crypto.randomUUID().replace(/-/g, '').slice(0, 20)}`);
	/** Sends `events` to `flow`, checks every answer; At Once: waits until every run ended, and counts the effects. */
	const send = async (flow: AtOnceFlow, events: StripeEvent[], { clients, bursts }: Load) => {
		const keys = events.map((e) => keyOf(flow, e.id));
		const cpuBefore = cpuSeconds(pid);
		const url = running.webhookUrl(flow.path);
		const result = { latencies: [] as number[], statuses: [] as number[], outcomes: [] as Array<string | null>, seconds: 0 };
		for (let start = 0; start < events.length; start += bursts ? BURST.events : events.length) {
			if (start > 0) await new Promise((resolve) => setTimeout(resolve, BURST.pauseMs));
			const chunk = events.slice(start, bursts ? start + BURST.events : events.length);
			const sent = await load.run({ url, requests: chunk.map((e) => signed(e)), concurrency: clients });
			result.latencies.push(...sent.latencies);
			result.statuses.push(...sent.statuses);
			result.outcomes.push(...sent.outcomes);
			result.seconds += sent.seconds;
		}
		const [status, outcome] = flow.role === 'atOnce' ? [200, 'new'] : [200, null];
		const wrong = result.statuses.findIndex((s, i) => s !== status || (outcome !== null && result.outcomes[i] !== outcome));
		if (wrong >= 0)
			throw new Error(
				`${flow.label}: an answer was ${result.statuses[wrong]} ${result.outcomes[wrong] ?? ''}, not ${status} ${outcome ?? ''}`,
			);
		if (runs(flow)) {
			// Every run ends (its 10 s call answered) before the next flow is measured.
			await withTimeout(
				(async () => {
					while (keys.some((key) => api.calls(key) === 0)) await new Promise((resolve) => setTimeout(resolve, 200));
				})(),
				STEP_MS + 120_000,
				`${flow.label}: some runs never reached the API`,
			);
		}
		return {
			latencies: result.latencies,
			perSecond: events.length / result.seconds,
			cpuMs: ((cpuSeconds(pid) - cpuBefore) * 1000) / events.length,
			effects: runs(flow) ? keys.reduce((sum, key) => sum + api.calls(key), 0) : 0,
		};
	};
	try {
		// Warm-up: each flow's code paths, the store file, the API connection (a step that answers at once).
		for (const flow of AT_ONCE_FLOWS) await send(flow, [event('warm'), event('warm'), event('warm')], LOADS[0]);
		for (let round = 0; round < args.rounds; round++) {
			for (const [index, sending] of LOADS.entries()) {
				for (const flow of rotate(AT_ONCE_FLOWS, round + index)) {
					const events = Array.from({ length: args.requests }, () => event(flow.key));
					for (const e of events) api.slow(keyOf(flow, e.id), STEP_MS);
					const measured = await send(flow, events, sending);
					const key = `${flow.key}@${sending.label}`;
					const entry = pooled.get(key) ?? { latencies: [], perSecond: [], cpuMs: [], effects: 0, events: 0 };
					entry.latencies.push(...measured.latencies);
					entry.perSecond.push(measured.perSecond);
					entry.cpuMs.push(measured.cpuMs);
					entry.effects += measured.effects;
					entry.events += events.length;
					pooled.set(key, entry);
				}
			}
			log(`At Once round ${round + 1}/${args.rounds} done (load ${loadAverage()})`);
		}
	} finally {
		load.stop();
	}
	return report(pooled, args);
}

function report(pooled: Map<string, Pooled>, args: Args): AtOnceRow[] {
	const of = (flowKey: string, sending: Load): Pooled => {
		const entry = pooled.get(`${flowKey}@${sending.label}`);
		if (!entry) throw new Error(`no results for ${flowKey}, ${sending.label}`);
		return entry;
	};
	const rows: AtOnceRow[] = [];
	const verdicts: string[] = [];
	for (const sending of LOADS) {
		const { clients } = sending;
		const floor = of('floor', sending);
		const floorP50 = percentile(floor.latencies, 50);
		const floorP99 = percentile(floor.latencies, 99);
		const immediatelyP99 = percentile(of('immediately', sending).latencies, 99);
		for (const flow of AT_ONCE_FLOWS) {
			const entry = of(flow.key, sending);
			const p50 = percentile(entry.latencies, 50);
			const p99 = percentile(entry.latencies, 99);
			rows.push({
				flow: flow.label,
				load: sending.label,
				clients,
				reqPerS: round(median(entry.perSecond), 1),
				p50Ms: round(p50, 1),
				p99Ms: round(p99, 1),
				p50VsFloor: round(p50 / floorP50, 2),
				p99VsFloor: round(p99 / floorP99, 2),
				p99VsImmediately: runs(flow) ? round(p99 / immediatelyP99, 2) : null,
				cpuMsPerRequest: round(median(entry.cpuMs), 1),
				effectsPerEvent: runs(flow) ? round(entry.effects / entry.events, 3) : null,
			});
			if (runs(flow) && entry.effects !== entry.events)
				verdicts.push(`WRONG: ${entry.effects} effects for ${entry.events} events through ${flow.label}`);
			if (flow.role !== 'atOnce') continue;
			const vsFloor = p99 / floorP99;
			verdicts.push(
				`${vsFloor <= TARGET.p99VsFloor ? 'TARGET HOLDS' : 'TARGET MISSED'}: At Once p99 vs the floor's, ${sending.label}: ${fmtRatio(vsFloor, 2)} (${fmtMs(p99)} vs ${fmtMs(floorP99)} ms; target ≤ ${TARGET.p99VsFloor}×; n8n's Immediately: ${fmtMs(immediatelyP99)} ms)`,
			);
			if (clients === 8)
				verdicts.push(
					`${p99 < TARGET.p99AtEightMs ? 'TARGET HOLDS' : 'TARGET MISSED'}: At Once p99, ${sending.label}: ${fmtMs(p99)} ms (target < ${TARGET.p99AtEightMs} ms; the floor: ${fmtMs(floorP99)} ms)`,
				);
		}
	}
	console.log(
		`\n## Idempotent Webhook trigger, Respond: At Once, a 10 s step, beside the floor (${args.rounds} interleaved rounds × ${args.requests} new events per flow and load)\n`,
	);
	printTable(
		[
			'flow',
			'load',
			'req/s (median)',
			'p50 ms',
			'p99 ms',
			'p50 vs floor',
			'p99 vs floor',
			'p99 vs Immediately',
			'n8n CPU ms/request',
			'effects per event',
		],
		rows.map((row) => [
			row.flow,
			row.load,
			row.reqPerS.toFixed(1),
			fmtMs(row.p50Ms),
			fmtMs(row.p99Ms),
			fmtRatio(row.p50VsFloor, 2),
			fmtRatio(row.p99VsFloor, 2),
			row.p99VsImmediately === null ? '–' : fmtRatio(row.p99VsImmediately, 2),
			fmtMs(row.cpuMsPerRequest),
			row.effectsPerEvent === null ? '–' : String(row.effectsPerEvent),
		]),
	);
	console.log(
		'\np50/p99: all rounds pooled; n8n CPU: while the flow was sent, its runs to their end included; effects: calls the API answered per event.',
	);
	for (const line of verdicts) console.log(line);
	if (verdicts.some((line) => line.startsWith('WRONG'))) throw new Error('an event had other than one effect');
	return rows;
}

/**
 * For `--profile --only atOnce`: per flow, `count` new events at `concurrency` clients (At Once's
 * with the 10 s step), each in a window of n8n's CPU profile (`window(name, requests, fn)`); the
 * first window is the sending, when the answers are made; the second the runs to their end (and 2 s more).
 */
export async function atOnceProfileWindows(
	ctx: Pick<BenchContext, 'running'> & { api: Api },
	{ count, concurrency }: { count: number; concurrency: number },
	window: (name: string, requests: number, fn: () => Promise<unknown>) => Promise<unknown>,
	{ stripeEvent }: { stripeEvent: (id: string) => StripeEvent },
): Promise<void> {
	const { running, api } = ctx;
	const load = startLoad();
	const event = (tag: string) => stripeEvent(`evt_${tag}_${crypto.randomUUID().replace(/-/g, '').slice(0, 20)}`);
	try {
		for (const flow of AT_ONCE_FLOWS) {
			const events = Array.from({ length: count }, () => event(flow.key));
			const keys = events.map((e) => keyOf(flow, e.id));
			for (const key of keys) api.slow(key, STEP_MS);
			await window(`${flow.key}: new, c=${concurrency}`, count, () =>
				load.run({ url: running.webhookUrl(flow.path), requests: events.map((e) => signed(e)), concurrency }),
			);
			// The runs' ends, in a window of their own: the step's 10 s, then what ends an execution.
			await window(`${flow.key}: runs to their end`, count, async () => {
				if (runs(flow)) while (keys.some((key) => api.calls(key) === 0)) await new Promise((resolve) => setTimeout(resolve, 200));
				await new Promise((resolve) => setTimeout(resolve, 2000));
			});
		}
	} finally {
		load.stop();
	}
}
