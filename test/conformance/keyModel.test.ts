import { randomUUID } from 'node:crypto';

import fc from 'fast-check';

import type { KeyStore } from '../../lib/store/contract';
import type { IdempotencyRecord, ReservationResult, StoredKey } from '../../lib/types';
import {
	describeRow,
	KeyModel,
	type CallAnswer,
	type ClaimSeen,
	type KeySeen,
	type RecordSeen,
	type ReservationSeen,
	type ReserveCall,
	type StoreCall,
} from '../support/keyModel';
import { describeEachBackend, freshStore, type StoreFixture } from '../support/stores';
import { openKeyStore, type OpenedStore } from '../support/storeTargets';

/*
 * The store against a reference model of the key state machine (test/support/keyModel.ts), with
 * fast-check's model-based commands: random sequences of rounds in which up to three clients (store
 * instances of their own on the one schema or file) reserve (batches with repeats, Lease or
 * Permanent, full or compact), complete, release, mark failed (with their own, stale or made-up
 * owner tokens), claim for replay and read keys at the same time; between rounds a lease or a
 * retention runs out, cleanup runs, or a client crashes (its store dropped, a reservation in
 * flight whose answer is lost, its keys left processing until their lease runs out). Every answer
 * is checked against the model, then the table itself at the end of each sequence.
 *
 * Time never passes on its own here: leases and retention are long, and a step that makes one run
 * out moves that row's clock field into the past (as the other conformance tests do).
 *
 * On failure the report gives the seed, the shrunk sequence, and the command that replays it:
 * STORE_MODEL_SEED, STORE_MODEL_PATH and STORE_MODEL_REPLAY_PATH (docs/testing.md). More runs:
 * STORE_MODEL_RUNS.
 */

const CLIENTS = 3;
const KEYS = ['k0', 'k1', 'k2', 'k3'] as const;
const LEASE_SECONDS = 600;
const RETENTION_SECONDS = 3600;
const DEFAULT_RUNS = 60;
const EXPECTED_ANSWERS = [
	'concurrent round',
	'reserve new',
	'reserve repeat',
	'reserve in_progress',
	'reserve duplicate',
	'reserve reclaimed',
	'complete applied',
	'complete not_owner',
	'release applied',
	'release completed',
	'fail applied',
	'fail not_owner',
	'claim claimed',
	'claim in_progress',
	'claim completed',
	'lease run out',
	'crash with an answer lost',
];

/**
 * A settle item as generated: an owner token handed out so far (`back`: how many tokens back from
 * the newest; the current owner's or a stale one), or a token never handed out for `key`.
 */
interface SettleItemSpec {
	token: { back: number } | { madeUpFor: string };
	/** The token sent in upper case (a UUID in either case is the same token). */
	upper: boolean;
	value: number | null;
}

type CallSpec =
	| Omit<ReserveCall, 'executionId'>
	| { kind: 'complete' | 'release' | 'fail'; items: SettleItemSpec[] }
	| { kind: 'claim'; keys: string[] }
	| { kind: 'getKeys'; keys: string[] };

type CommandSpec =
	/** One call; with `joinPrevious`, at the same time as the calls before it (up to three at once). */
	| { kind: 'call'; client: number; joinPrevious: boolean; call: CallSpec }
	| { kind: 'expireLease'; key: string }
	| { kind: 'expireRetention'; key: string }
	| { kind: 'cleanup' }
	| { kind: 'crash'; client: number; lost: Omit<ReserveCall, 'executionId'> | null };

interface Real {
	fixture: StoreFixture;
	clients: Array<OpenedStore<KeyStore>>;
	/** Every owner token handed out in this sequence, in order, with its key. */
	tokens: Array<{ key: string; token: string }>;
	executions: number;
	/** What happened so far in this sequence, for the failure report. */
	trace: string[];
	/** Calls waiting to run together (a round), with their clients. */
	pending: Array<{ client: number; call: CallSpec }>;
	seen: Seen;
}

/** How often each answer came, over all sequences of one backend: proof that the runs reach every transition. */
type Seen = Record<string, number>;
function count(seen: Seen, what: string): void {
	seen[what] = (seen[what] ?? 0) + 1;
}
function countAnswer(seen: Seen, call: StoreCall, answer: CallAnswer): void {
	if (answer.kind === 'reserve')
		for (const result of answer.results)
			count(seen, `reserve ${result.reclaimed ? 'reclaimed' : result.repeatInBatch ? 'repeat' : result.outcome}`);
	if (answer.kind === 'settle')
		for (const result of answer.results) count(seen, `${call.kind} ${result.applied ? 'applied' : result.reason}`);
	if (answer.kind === 'claim') for (const result of answer.results) count(seen, `claim ${result.claimed ? 'claimed' : result.reason}`);
	if (answer.kind === 'cleanup') count(seen, answer.deleted > 0 ? 'cleanup deleted' : 'cleanup nothing');
	if (answer.kind === 'getKeys')
		for (const key of Object.values(answer.keys)) count(seen, `getKeys ${key.status}${key.retentionEnded ? ' retention ended' : ''}`);
}

interface ModelBox {
	model: KeyModel;
}

const key = fc.constantFrom(...KEYS);
const reserveSpec: fc.Arbitrary<Omit<ReserveCall, 'executionId'>> = fc.record({
	kind: fc.constant('reserve' as const),
	items: fc.array(fc.record({ key, hash: fc.constantFrom(null, 'h1', 'h2') }), { minLength: 1, maxLength: 4 }),
	mode: fc.oneof({ weight: 4, arbitrary: fc.constant('lease' as const) }, { weight: 1, arbitrary: fc.constant('permanent' as const) }),
	compact: fc.boolean(),
});
const settleSpec = fc.record({
	kind: fc.constantFrom('complete' as const, 'release' as const, 'fail' as const),
	items: fc.array(
		fc.record({
			token: fc.oneof({ weight: 6, arbitrary: fc.record({ back: fc.nat(5) }) }, { weight: 1, arbitrary: fc.record({ madeUpFor: key }) }),
			upper: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
			value: fc.option(fc.nat(99)),
		}),
		{ minLength: 1, maxLength: 3 },
	),
});
const callSpec: fc.Arbitrary<CallSpec> = fc.oneof(
	{ weight: 5, arbitrary: reserveSpec },
	{ weight: 5, arbitrary: settleSpec },
	{ weight: 2, arbitrary: fc.record({ kind: fc.constant('claim' as const), keys: fc.array(key, { minLength: 1, maxLength: 3 }) }) },
	{ weight: 1, arbitrary: fc.record({ kind: fc.constant('getKeys' as const), keys: fc.array(key, { minLength: 1, maxLength: 4 }) }) },
);
// Each call is a command of its own, so shrinking removes calls one by one from a round too.
const storeCall: fc.Arbitrary<CommandSpec> = fc.record({
	kind: fc.constant('call' as const),
	client: fc.nat(CLIENTS - 1),
	joinPrevious: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 2, arbitrary: fc.constant(false) }),
	call: callSpec,
});
const expireLease: fc.Arbitrary<CommandSpec> = fc.record({ kind: fc.constant('expireLease' as const), key });
const expireRetention: fc.Arbitrary<CommandSpec> = fc.record({ kind: fc.constant('expireRetention' as const), key });
const cleanup: fc.Arbitrary<CommandSpec> = fc.constant({ kind: 'cleanup' as const });
const crash: fc.Arbitrary<CommandSpec> = fc.record({
	kind: fc.constant('crash' as const),
	client: fc.nat(CLIENTS - 1),
	lost: fc.option(reserveSpec, { nil: null }) as fc.Arbitrary<Omit<ReserveCall, 'executionId'> | null>,
});

class StoreCommand implements fc.AsyncCommand<ModelBox, Real> {
	constructor(readonly spec: CommandSpec) {}
	check(): boolean {
		return true;
	}
	async run(box: ModelBox, real: Real): Promise<void> {
		try {
			await runCommand(this.spec, box.model, real);
		} catch (error) {
			throw traced(error, real);
		}
	}
	toString(): string {
		return describeSpec(this.spec);
	}
}

/** A failure with the sequence so far and its answers (the failing round's last). */
function traced(error: unknown, real: Real): Error {
	return new Error([(error as Error).message, 'The sequence, with the answers:', ...real.trace, ''].join('\n'), { cause: error });
}

function describeCall(call: CallSpec): string {
	switch (call.kind) {
		case 'reserve':
			return `reserve[${call.items.map((item) => `${item.key}${item.hash ? `/${item.hash}` : ''}`).join(',')}] ${call.mode}${call.compact ? ' compact' : ''}`;
		case 'claim':
		case 'getKeys':
			return `${call.kind}[${call.keys.join(',')}]`;
		default:
			return `${call.kind}[${call.items.map((item) => `${'back' in item.token ? `token#-${item.token.back}` : `made-up token for ${item.token.madeUpFor}`}${item.upper ? ' upper' : ''}${item.value === null ? '' : ` ${call.kind === 'fail' ? 'error' : 'response'} ${item.value}`}`).join(', ')}]`;
	}
}

function describeSpec(spec: CommandSpec): string {
	switch (spec.kind) {
		case 'call':
			return `${spec.joinPrevious ? '‖ ' : ''}c${spec.client} ${describeCall(spec.call)}`;
		case 'expireLease':
		case 'expireRetention':
			return `${spec.kind}(${spec.key})`;
		case 'cleanup':
			return 'cleanup()';
		case 'crash':
			return `crash(c${spec.client}${spec.lost ? `, answer lost: ${describeCall(spec.lost)}` : ''})`;
	}
}

/** A settle item's key and token: a token handed out so far (with its key), or one never handed out; none handed out yet, one made up for k0. */
function tokenFor(real: Real, item: SettleItemSpec): { key: string; token: string } {
	const back = 'back' in item.token ? item.token.back : undefined;
	const issued = back === undefined ? undefined : real.tokens[real.tokens.length - 1 - Math.min(back, real.tokens.length - 1)];
	const chosen = issued ?? { key: 'madeUpFor' in item.token ? item.token.madeUpFor : KEYS[0], token: randomUUID() };
	return { key: chosen.key, token: item.upper ? chosen.token.toUpperCase() : chosen.token };
}

/** The generated call as the store gets it: tokens picked, an execution id of its own. */
function concrete(call: CallSpec, real: Real): StoreCall {
	if (call.kind === 'reserve') return { ...call, executionId: `x${++real.executions}` };
	if (call.kind === 'claim') return { ...call, executionId: `x${++real.executions}` };
	if (call.kind === 'getKeys') return call;
	const seen = new Set<string>();
	const items: Array<{ key: string; token: string; response?: unknown; error?: string }> = [];
	for (const item of call.items) {
		const { key, token } = tokenFor(real, item);
		// One item per key and token: the same owner's item twice is a re-send, another test's subject.
		if (seen.has(`${key} ${token.toLowerCase()}`)) continue;
		seen.add(`${key} ${token.toLowerCase()}`);
		if (call.kind === 'complete') items.push({ key, token, ...(item.value === null ? {} : { response: { n: item.value } }) });
		else if (call.kind === 'fail') items.push({ key, token, error: `error ${item.value ?? 0}` });
		else items.push({ key, token });
	}
	return { kind: call.kind, items };
}

function recordSeen(record: Partial<IdempotencyRecord>, fields: 'full' | 'compact' | 'claim' | 'stored'): RecordSeen {
	const seen: RecordSeen = {
		status: record.status!,
		attempts: record.attempts!,
		leaseActive: record.leaseActive!,
		response: record.response ?? null,
		payloadHash: record.payloadHash ?? null,
	};
	// Get Key and Claim for Replay do not read the fingerprint; compact records leave out the rest.
	if (fields === 'claim' || fields === 'stored') delete (seen as Partial<RecordSeen>).payloadHash;
	if (fields !== 'compact')
		Object.assign(seen, { duplicates: record.duplicateCount, lastError: record.lastError, executionId: record.executionId });
	return seen;
}

async function callStore(store: KeyStore, call: StoreCall): Promise<CallAnswer> {
	const options = { leaseSeconds: LEASE_SECONDS, retentionSeconds: RETENTION_SECONDS };
	switch (call.kind) {
		case 'reserve': {
			const requests = call.items.map((item) => ({ key: item.key, keySource: 'custom', payloadHash: item.hash }));
			const results: Array<ReservationResult<Partial<IdempotencyRecord> & ReservationResult['record']>> = (await store.reserve(requests, {
				...options,
				mode: call.mode,
				executionId: call.executionId,
				workflowId: 'wf-model',
				detail: call.compact ? 'compact' : 'full',
			})) as never;
			return {
				kind: 'reserve',
				results: results.map(
					(result): ReservationSeen => ({
						outcome: result.outcome,
						ownerToken: result.ownerToken,
						reclaimed: result.reclaimed,
						repeatInBatch: result.repeatInBatch,
						payloadMismatch: result.payloadMismatch,
						record: recordSeen(result.record, call.compact ? 'compact' : 'full'),
					}),
				),
			};
		}
		case 'complete':
		case 'release':
		case 'fail': {
			const items = call.items.map((item) => ({ key: item.key, ownerToken: item.token, response: item.response, error: item.error ?? '' }));
			const reports =
				call.kind === 'complete'
					? await store.complete(items.map(({ key, ownerToken, response }) => ({ key, ownerToken, response })))
					: call.kind === 'release'
						? await store.release(items.map(({ key, ownerToken }) => ({ key, ownerToken })))
						: await store.fail(items);
			return {
				kind: 'settle',
				results: reports.map((report) => (report.applied ? { applied: true } : { applied: false, reason: report.reason })),
			};
		}
		case 'claim': {
			const claims = await store.claimForReplay(call.keys, { ...options, executionId: call.executionId, workflowId: 'wf-replay' });
			return {
				kind: 'claim',
				results: claims.map(
					(result): ClaimSeen =>
						result.claimed
							? { claimed: true, ownerToken: result.ownerToken, record: recordSeen(result.record, 'claim') }
							: { claimed: false, reason: result.reason, record: result.record ? recordSeen(result.record, 'claim') : null },
				),
			};
		}
		case 'getKeys': {
			const found: Map<string, StoredKey> = await store.getKeys(call.keys);
			const keys: Record<string, KeySeen> = {};
			for (const [stored, record] of found) keys[stored] = { ...recordSeen(record, 'stored'), retentionEnded: record.retentionEnded };
			return { kind: 'getKeys', keys };
		}
		case 'cleanup': {
			const result = await store.cleanup({ retentionSeconds: RETENTION_SECONDS, batchSize: 1000, timeBudgetSeconds: 60 });
			return { kind: 'cleanup', deleted: result.deleted, finished: result.finished };
		}
	}
}

/** An answer in one line for the trace: outcomes and reasons, tokens by their first 8 digits. */
function describeAnswer(answer: CallAnswer): string {
	const token = (value: string | null) => (value ? ` ${value.slice(0, 8)}` : '');
	const record = (seen: RecordSeen | null) =>
		seen ? ` ${seen.status} ×${seen.attempts}${seen.duplicates === undefined ? '' : ` dup ${seen.duplicates}`}` : '';
	switch (answer.kind) {
		case 'reserve':
			return answer.results.map((result) => `${result.outcome}${token(result.ownerToken)}${record(result.record)}`).join(', ');
		case 'settle':
			return answer.results.map((result) => (result.applied ? 'applied' : result.reason)).join(', ');
		case 'claim':
			return answer.results
				.map((result) =>
					result.claimed ? `claimed${token(result.ownerToken)}${record(result.record)}` : `${result.reason}${record(result.record)}`,
				)
				.join(', ');
		case 'getKeys':
			return JSON.stringify(answer.keys);
		case 'cleanup':
			return `deleted ${answer.deleted}`;
	}
}

function describeConcrete(call: StoreCall): string {
	if (call.kind === 'complete' || call.kind === 'release' || call.kind === 'fail') {
		return `${call.kind}[${call.items.map((item) => `${item.key} ${item.token.slice(0, 8)}`).join(', ')}]`;
	}
	return call.kind;
}

/** Runs the calls waiting to run together, at once, and holds their answers to the model. */
async function flush(model: KeyModel, real: Real): Promise<void> {
	const round = real.pending.splice(0);
	if (round.length === 0) return;
	const calls = round.map((pending) => concrete(pending.call, real));
	const answers = await Promise.all(calls.map((call, index) => callStore(real.clients[round[index].client].store, call)));
	const title = round.map((pending) => `c${pending.client} ${describeCall(pending.call)}`).join(' ‖ ');
	real.trace.push(`  round(${title})`);
	for (const [index, answer] of answers.entries()) {
		real.trace.push(`    ${describeConcrete(calls[index])} → ${describeAnswer(answer)}`);
		countAnswer(real.seen, calls[index], answer);
	}
	if (calls.length > 1) count(real.seen, 'concurrent round');
	try {
		model.round(calls, answers);
	} catch (error) {
		throw new Error(`round(${title}) failed: ${(error as Error).message}`, { cause: error });
	}
	for (const [index, answer] of answers.entries()) {
		const call = calls[index];
		if (answer.kind === 'reserve' && call.kind === 'reserve') {
			for (const [item, result] of answer.results.entries())
				if (result.ownerToken) real.tokens.push({ key: call.items[item].key, token: result.ownerToken });
		}
		if (answer.kind === 'claim' && call.kind === 'claim') {
			for (const [item, result] of answer.results.entries())
				if (result.claimed) real.tokens.push({ key: call.keys[item], token: result.ownerToken });
		}
	}
}

async function runCommand(spec: CommandSpec, model: KeyModel, real: Real): Promise<void> {
	const { fixture } = real;
	if (spec.kind !== 'call') await flush(model, real);
	switch (spec.kind) {
		case 'call':
			// A round takes at most one call per client's worth of concurrency; then the next starts.
			if (!spec.joinPrevious || real.pending.length >= CLIENTS) await flush(model, real);
			real.pending.push({ client: spec.client, call: spec.call });
			return;
		case 'expireLease':
		case 'expireRetention': {
			const row = await fixture.row(spec.key);
			real.trace.push(`  ${describeSpec(spec)} (the row: ${row ? `${row.status}${row.locked_until ? ', with a lease' : ''}` : 'none'})`);
			model.timeStep(
				spec.key,
				spec.kind === 'expireLease' ? 'lease' : 'retention',
				row && { status: row.status, hasLease: row.locked_until !== null },
			);
			if (spec.kind === 'expireLease' && row?.status === 'processing' && row.locked_until) {
				await fixture.update(spec.key, { lockedUntil: -1 });
				count(real.seen, 'lease run out');
			}
			if (spec.kind === 'expireRetention' && row) await fixture.update(spec.key, { expiresAt: -1 });
			return;
		}
		case 'cleanup': {
			const answer = await callStore(real.clients[0].store, { kind: 'cleanup' });
			real.trace.push(`  cleanup() → ${describeAnswer(answer)}`);
			if (answer.kind === 'cleanup') model.cleanup(answer);
			countAnswer(real.seen, { kind: 'cleanup' }, answer);
			return;
		}
		case 'crash': {
			// The client dies: its store is dropped (its pool closed), a reservation it sent may or may
			// not have been stored and its answer never arrives; a fresh store takes the client's place.
			const crashed = real.clients[spec.client];
			const lost = spec.lost && (concrete(spec.lost, real) as ReserveCall);
			const inFlight = lost ? callStore(crashed.store, lost) : Promise.resolve();
			await Promise.allSettled([inFlight, crashed.close()]);
			real.clients[spec.client] = openKeyStore(fixture.target, 2);
			real.trace.push(`  ${describeSpec(spec)}`);
			if (lost) model.lostReserve(lost);
			count(real.seen, lost ? 'crash with an answer lost' : 'crash');
			return;
		}
	}
}

/** The whole table against the model at the end of a sequence: Get Key of every key, and each row's owner token. */
async function finalCheck(model: KeyModel, real: Real): Promise<void> {
	await flush(model, real);
	const answer = await callStore(real.clients[0].store, { kind: 'getKeys', keys: [...KEYS] });
	real.trace.push(`  final getKeys → ${describeAnswer(answer)}`);
	model.round([{ kind: 'getKeys', keys: [...KEYS] }], [answer]);
	for (const [key, row] of model.knownRows()) {
		const stored = await real.fixture.row(key);
		// A token the model cannot know (a lost answer's) must at least be none handed out to a client.
		const honoured = !row
			? !stored
			: row.owner.startsWith('lost:')
				? !real.tokens.some((entry) => entry.token === stored?.owner_token)
				: stored?.owner_token === row.owner;
		if (!honoured) throw new Error(`${key} is stored with owner token ${stored?.owner_token}; the model: ${describeRow(key, row)}`);
	}
}

function envNumber(name: string): number | undefined {
	const text = process.env[name];
	if (text === undefined || text === '') return undefined;
	const value = Number(text);
	if (!Number.isInteger(value)) throw new Error(`${name} must be a whole number, not ${JSON.stringify(text)}.`);
	return value;
}

describeEachBackend('the store against a model of the key state machine', (backend) => {
	let fixture: StoreFixture;
	const clients: Array<OpenedStore<KeyStore>> = [];

	beforeAll(async () => {
		fixture = await freshStore(backend, { prefix: 'model' });
		for (let client = 0; client < CLIENTS; client++) clients.push(openKeyStore(fixture.target, 2));
	});

	afterAll(async () => {
		for (const client of clients) await client.close();
		await fixture?.close();
	});

	it('random rounds of concurrent calls from three clients, lease and retention run-outs, cleanup and crashes: every answer as the model says', async () => {
		const seed = envNumber('STORE_MODEL_SEED') ?? (Math.random() * 2 ** 31) | 0;
		const path = process.env.STORE_MODEL_PATH || undefined;
		const replayPath = process.env.STORE_MODEL_REPLAY_PATH || undefined;
		const numRuns = envNumber('STORE_MODEL_RUNS') ?? DEFAULT_RUNS;
		const seen: Seen = {};
		const commands = fc.commands(
			[
				storeCall,
				storeCall,
				storeCall,
				storeCall,
				storeCall,
				storeCall,
				storeCall,
				storeCall,
				storeCall,
				storeCall,
				expireLease,
				expireLease,
				expireRetention,
				expireRetention,
				cleanup,
				cleanup,
				crash,
			].map((spec) => spec.map((made) => new StoreCommand(made))),
			{ maxCommands: 50, size: 'max', replayPath },
		);
		const property = fc.asyncProperty(commands, async (sequence) => {
			await fixture.clear();
			const real: Real = { fixture, clients, tokens: [], executions: 0, trace: [], pending: [], seen };
			count(seen, 'sequence');
			const box: ModelBox = { model: new KeyModel() };
			await fc.asyncModelRun(() => ({ model: box, real }), sequence);
			try {
				await finalCheck(box.model, real);
			} catch (error) {
				throw traced(error, real);
			}
		});
		const details = await fc.check(property, { seed, path, numRuns });
		if (details.failed) {
			const shrunkReplayPath = /replayPath="([^"]*)"/.exec(String(details.counterexample?.[0]))?.[1];
			const replay = [
				`STORE_MODEL_SEED=${details.seed}`,
				`STORE_MODEL_PATH=${details.counterexamplePath}`,
				shrunkReplayPath ? `STORE_MODEL_REPLAY_PATH=${shrunkReplayPath}` : '',
				`npx jest test/conformance/keyModel.test.ts -t '${backend}'`,
			]
				.filter(Boolean)
				.join(' ');
			const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
			throw new Error(`${fc.defaultReportMessage(details)}\n\nThe shrunk sequence's failure:\n${error}\n\nReplay this failure: ${replay}`);
		}
		console.log(`[${backend}] seed ${seed}, ${details.numRuns} sequences: ${JSON.stringify(seen)}`);
		expect(details.numRuns).toBe(path ? 1 : numRuns);
		if (!path && numRuns >= DEFAULT_RUNS) {
			// The runs reach every transition (each of these comes tens of times in a default run).
			const reached = EXPECTED_ANSWERS.filter((what) => (seen[what] ?? 0) > 0);
			expect(reached).toEqual(EXPECTED_ANSWERS);
		}
	}, 600_000);
});
