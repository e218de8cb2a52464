// A small reference model of one key table, written from the store contract and the statements'
// documented rules (not from lib/store/rules.ts), and a checker that holds a store's answers to it.
// The model test (test/conformance/keyModel.test.ts) drives a real store with random rounds of
// calls and hands each round's answers here.
//
// Calls that run at the same time may take effect in any order, so the checker keeps every model
// state some order of the calls so far explains (a linearizability check over small rounds): a
// round is accepted when at least one order of its calls, from at least one kept state, gives
// exactly the answers seen. A Postgres settle is two statements (the update, then a read of the
// keys it left unchanged to say why), so its two halves may be ordered apart.

export type Status = 'processing' | 'completed' | 'failed';

/** One stored key as the model holds it. Times are reduced to what the store can tell apart. */
export interface ModelRow {
	status: Status;
	attempts: number;
	duplicates: number;
	/** The lease: none (completed, failed, permanent), running, or run out. */
	lease: 'none' | 'live' | 'expired';
	/** The retention end has passed (it is never reached by waiting: leases and retention are long). */
	retentionPast: boolean;
	owner: string;
	/** Completed by its owner (Complete ran), not merely completed when reserved (Permanent). */
	effectDone: boolean;
	response: unknown;
	lastError: string | null;
	executionId: string | null;
	payloadHash: string | null;
}

export type ModelState = Record<string, ModelRow>;

export interface ReserveCall {
	kind: 'reserve';
	items: Array<{ key: string; hash: string | null }>;
	mode: 'lease' | 'permanent';
	compact: boolean;
	executionId: string;
}
export interface SettleCall {
	kind: 'complete' | 'release' | 'fail';
	items: Array<{ key: string; token: string; response?: unknown; error?: string }>;
}
export interface ClaimCall {
	kind: 'claim';
	keys: string[];
	executionId: string;
}
export interface GetKeysCall {
	kind: 'getKeys';
	keys: string[];
}
export interface CleanupCall {
	kind: 'cleanup';
}
export type StoreCall = ReserveCall | SettleCall | ClaimCall | GetKeysCall | CleanupCall;

/** The parts of an answer the model predicts, as plain data (see observe* in the test). */
export interface RecordSeen {
	status: Status;
	attempts: number;
	leaseActive: boolean;
	response: unknown;
	payloadHash: string | null;
	/** Absent from a compact record. */
	duplicates?: number;
	lastError?: string | null;
	executionId?: string | null;
}
export interface ReservationSeen {
	outcome: 'new' | 'duplicate' | 'in_progress';
	ownerToken: string | null;
	reclaimed: boolean;
	repeatInBatch: boolean;
	payloadMismatch: boolean | null;
	record: RecordSeen;
}
export type SettleSeen = { applied: true } | { applied: false; reason: string };
export type ClaimSeen = { claimed: true; ownerToken: string; record: RecordSeen } | { claimed: false; reason: string; record: RecordSeen | null };
export type KeySeen = RecordSeen & { retentionEnded: boolean };
export type CallAnswer =
	| { kind: 'reserve'; results: ReservationSeen[] }
	| { kind: 'settle'; results: SettleSeen[] }
	| { kind: 'claim'; results: ClaimSeen[] }
	| { kind: 'getKeys'; keys: Record<string, KeySeen> }
	| { kind: 'cleanup'; deleted: number; finished: boolean };

/** The key counts as absent: its retention ended and no lease is running on it. */
const ended = (row: ModelRow) => row.retentionPast && row.lease !== 'live';
/** A replay may take it over: failed, or processing with its lease run out. */
const replayable = (row: ModelRow) => row.status === 'failed' || (row.status === 'processing' && row.lease === 'expired');

function recordOf(row: ModelRow): Required<RecordSeen> {
	return {
		status: row.status,
		attempts: row.attempts,
		leaseActive: row.lease === 'live',
		response: row.response,
		payloadHash: row.payloadHash,
		duplicates: row.duplicates,
		lastError: row.lastError,
		executionId: row.executionId,
	};
}

/** A mismatch between the model and an answer: what the model expected, and what came. */
class Mismatch extends Error {}

function same(where: string, expected: unknown, actual: unknown): void {
	if (JSON.stringify(expected) !== JSON.stringify(actual)) {
		throw new Mismatch(`${where}: the model expects ${JSON.stringify(expected)}, the store answered ${JSON.stringify(actual)}`);
	}
}

/**
 * A seen record against the model's row, field by field of what that answer carries (a compact
 * reservation leaves some out; Get Key and Claim for Replay do not read the payload fingerprint).
 */
function sameRecord(where: string, row: ModelRow, seen: RecordSeen): void {
	same(where, pick(recordOf(row), Object.keys(seen)), seen);
}

function pick<T extends object>(from: T, fields: string[]): Partial<T> {
	const picked: Partial<T> = {};
	for (const field of fields) (picked as Record<string, unknown>)[field] = (from as Record<string, unknown>)[field];
	return picked;
}

/**
 * Issues owner tokens for a call whose answer was lost (a crashed client's call): the model cannot
 * know them, and nobody holds them.
 */
let lostTokens = 0;

/**
 * Reserve, against the model: per distinct key, absent or ended → new (attempts 1); failed or
 * lease run out → taken over (new, attempts + 1); a running lease → in progress; completed →
 * duplicate. Repeats in the batch are duplicates. With `answer` undefined (lost), new keys get
 * owner tokens nobody knows.
 */
function reserve(state: ModelState, call: ReserveCall, answer: ReservationSeen[] | undefined): void {
	const seenKeys = new Set<string>();
	const firsts: Array<{ index: number; outcome: ReservationSeen['outcome'] }> = [];
	for (const [index, item] of call.items.entries()) {
		if (seenKeys.has(item.key)) continue;
		seenKeys.add(item.key);
		const row = state[item.key];
		const takeOver = (fresh: boolean) => {
			const token = answer ? answer[index].ownerToken : `lost:${++lostTokens}`;
			if (answer && (typeof token !== 'string' || !/^[0-9a-f-]{36}$/.test(token))) {
				throw new Mismatch(`reserve ${item.key}: a new reservation came without an owner token (${JSON.stringify(token)})`);
			}
			const lease = call.mode === 'lease';
			state[item.key] = {
				status: lease ? 'processing' : 'completed',
				attempts: fresh ? 1 : row!.attempts + 1,
				duplicates: fresh ? 0 : row!.duplicates,
				lease: lease ? 'live' : 'none',
				retentionPast: false,
				owner: token!,
				effectDone: false,
				response: null,
				lastError: fresh ? null : row!.lastError,
				executionId: call.executionId,
				payloadHash: fresh ? item.hash : (row!.payloadHash ?? item.hash),
			};
			firsts.push({ index, outcome: 'new' });
		};
		if (!row || ended(row)) takeOver(true);
		else if (row.status === 'failed' || row.lease === 'expired') takeOver(false);
		else {
			row.duplicates += 1;
			row.payloadHash = row.payloadHash ?? item.hash;
			firsts.push({ index, outcome: row.status === 'processing' && row.lease === 'live' ? 'in_progress' : 'duplicate' });
		}
	}
	if (!answer) return;
	same('reserve: number of results', call.items.length, answer.length);
	const firstOutcome = new Map(firsts.map((first) => [first.index, first.outcome]));
	for (const [index, item] of call.items.entries()) {
		const seen = answer[index];
		const where = `reserve ${item.key} (item ${index})`;
		const row = state[item.key];
		const outcome = firstOutcome.get(index);
		const mine = outcome === 'new';
		same(`${where} outcome`, outcome ?? 'duplicate', seen.outcome);
		same(`${where} repeatInBatch`, outcome === undefined, seen.repeatInBatch);
		if (mine) same(`${where} ownerToken`, row.owner, seen.ownerToken);
		else same(`${where} ownerToken`, null, seen.ownerToken);
		same(`${where} reclaimed`, mine && row.attempts > 1, seen.reclaimed);
		same(`${where} payloadMismatch`, item.hash === null || row.payloadHash === null ? null : item.hash !== row.payloadHash, seen.payloadMismatch);
		sameRecord(`${where} record`, row, seen.record);
	}
}

/** Whether a settle item changes its key: the owner's token, and a state that settle accepts. */
function settles(kind: SettleCall['kind'], row: ModelRow | undefined, token: string): boolean {
	if (!row || row.owner !== token) return false;
	// Complete applies to the owner's key unless it was marked failed; Release and Mark Failed
	// never undo a Complete (its business step ran).
	return kind === 'complete' ? row.status !== 'failed' : !row.effectDone;
}

/** The first half of a settle: which items apply, and their effect. */
function settleApply(state: ModelState, call: SettleCall, answer: SettleSeen[]): void {
	same(`${call.kind}: number of results`, call.items.length, answer.length);
	for (const [index, item] of call.items.entries()) {
		const row = state[item.key];
		const applies = settles(call.kind, row, item.token);
		same(`${call.kind} ${item.key} with token ${item.token.slice(0, 8)} (item ${index}) applied`, applies, answer[index].applied);
		if (!applies) continue;
		if (call.kind === 'release') delete state[item.key];
		else if (call.kind === 'fail') Object.assign(row, { status: 'failed', lease: 'none', lastError: item.error ?? null });
		else Object.assign(row, { status: 'completed', lease: 'none', effectDone: true, response: item.response ?? row.response });
	}
}

/** The second half of a settle: why each item that did not apply did not. */
function settleReasons(state: ModelState, call: SettleCall, answer: SettleSeen[]): void {
	for (const [index, item] of call.items.entries()) {
		const seen = answer[index];
		if (seen.applied) continue;
		const row = state[item.key];
		const reason = !row ? 'not_found' : row.owner !== item.token ? 'not_owner' : row.effectDone ? 'completed' : 'failed';
		same(`${call.kind} ${item.key} with token ${item.token.slice(0, 8)} (item ${index}) reason`, reason, seen.reason);
	}
}

/** Claim for Replay: failed or lease run out → claimed (attempts + 1, a new lease and retention). */
function claim(state: ModelState, call: ClaimCall, answer: ClaimSeen[]): void {
	same('claim: number of results', call.keys.length, answer.length);
	const firsts = new Map<string, number>();
	const claimed = new Set<string>();
	for (const [index, key] of call.keys.entries()) {
		if (firsts.has(key)) continue;
		firsts.set(key, index);
		const row = state[key];
		if (!row || !replayable(row)) continue;
		const seen = answer[index];
		if (!seen.claimed || !/^[0-9a-f-]{36}$/.test(seen.ownerToken)) {
			throw new Mismatch(`claim ${key} (item ${index}): the model expects it claimed, the store answered ${JSON.stringify(seen)}`);
		}
		Object.assign(row, {
			status: 'processing',
			attempts: row.attempts + 1,
			lease: 'live',
			retentionPast: false,
			owner: seen.ownerToken,
			effectDone: false,
			response: null,
			executionId: call.executionId,
		});
		claimed.add(key);
	}
	for (const [index, key] of call.keys.entries()) {
		const seen = answer[index];
		const where = `claim ${key} (item ${index})`;
		const row = state[key];
		if (firsts.get(key) !== index) {
			same(`${where}`, { claimed: false, reason: 'repeat_in_batch' }, { claimed: seen.claimed, reason: seen.claimed ? undefined : seen.reason });
			if (row) sameRecord(`${where} record`, row, seen.record!);
			else same(`${where} record`, null, seen.record);
			continue;
		}
		if (claimed.has(key)) {
			same(`${where} ownerToken`, row.owner, seen.claimed ? seen.ownerToken : null);
			sameRecord(`${where} record`, row, seen.record!);
			continue;
		}
		const reason = !row ? 'not_found' : row.status === 'completed' ? 'completed' : 'in_progress';
		same(`${where}`, { claimed: false, reason }, { claimed: seen.claimed, reason: seen.claimed ? undefined : seen.reason });
		if (row) sameRecord(`${where} record`, row, seen.record!);
		else same(`${where} record`, null, seen.record);
	}
}

function getKeys(state: ModelState, call: GetKeysCall, answer: Record<string, KeySeen>): void {
	const expected: Record<string, KeySeen> = {};
	for (const key of [...new Set(call.keys)].sort()) {
		const row = state[key];
		if (row) expected[key] = { ...recordOf(row), retentionEnded: row.retentionPast };
	}
	const actual: Record<string, KeySeen> = {};
	for (const key of Object.keys(answer).sort()) {
		actual[key] = answer[key];
		if (expected[key]) expected[key] = pick(expected[key], Object.keys(answer[key])) as KeySeen;
	}
	same(`getKeys ${JSON.stringify(call.keys)}`, expected, actual);
}

function cleanup(state: ModelState, answer: { deleted: number; finished: boolean }): void {
	const doomed = Object.keys(state).filter((key) => ended(state[key]));
	same('cleanup', { deleted: doomed.length, finished: true }, { deleted: answer.deleted, finished: answer.finished });
	for (const key of doomed) delete state[key];
}

/** One atomic step of a call: a settle has two (its update, then its read of the reasons). */
type Step = { call: number; half: 'whole' | 'apply' | 'reasons' };

function stepsOf(call: StoreCall, index: number): Step[] {
	return call.kind === 'complete' || call.kind === 'release' || call.kind === 'fail'
		? [
				{ call: index, half: 'apply' },
				{ call: index, half: 'reasons' },
			]
		: [{ call: index, half: 'whole' }];
}

/** Every order of the calls' steps that keeps each call's own steps in order. */
function* interleavings(lists: Step[][]): Generator<Step[]> {
	if (lists.every((list) => list.length === 0)) {
		yield [];
		return;
	}
	for (const [index, list] of lists.entries()) {
		if (list.length === 0) continue;
		const rest = lists.map((other, otherIndex) => (otherIndex === index ? other.slice(1) : other));
		for (const tail of interleavings(rest)) yield [list[0], ...tail];
	}
}

function runStep(state: ModelState, step: Step, calls: StoreCall[], answers: CallAnswer[]): void {
	const call = calls[step.call];
	const answer = answers[step.call];
	if (call.kind === 'reserve' && answer.kind === 'reserve') reserve(state, call, answer.results);
	else if (call.kind === 'claim' && answer.kind === 'claim') claim(state, call, answer.results);
	else if (call.kind === 'getKeys' && answer.kind === 'getKeys') getKeys(state, call, answer.keys);
	else if (call.kind === 'cleanup' && answer.kind === 'cleanup') cleanup(state, answer);
	else if ((call.kind === 'complete' || call.kind === 'release' || call.kind === 'fail') && answer.kind === 'settle') {
		if (step.half === 'apply') settleApply(state, call, answer.results);
		else settleReasons(state, call, answer.results);
	} else throw new Mismatch(`${call.kind}: an answer of kind ${answer.kind}`);
}

const clone = (state: ModelState): ModelState => JSON.parse(JSON.stringify(state)) as ModelState;
/** Two states that differ only in key order are one state. */
const canonical = (state: ModelState) => JSON.stringify(Object.keys(state).sort().map((key) => [key, state[key]]));

/** The states some order of everything so far explains; a failed round says why each order failed. */
export class KeyModel {
	states: ModelState[] = [{}];
	private issued = new Set<string>();

	/**
	 * Holds one round of calls that ran at the same time against every kept state and every order
	 * of their steps; keeps the resulting states that explain every answer. Throws when none does.
	 */
	round(calls: StoreCall[], answers: CallAnswer[]): void {
		this.checkTokens(answers);
		const next = new Map<string, ModelState>();
		const failures: string[] = [];
		for (const state of this.states) {
			for (const order of interleavings(calls.map(stepsOf))) {
				const candidate = clone(state);
				try {
					for (const step of order) runStep(candidate, step, calls, answers);
					next.set(canonical(candidate), candidate);
				} catch (error) {
					if (!(error instanceof Mismatch)) throw error;
					if (failures.length < 6) failures.push(`  in the order ${order.map((step) => `${step.call}${step.half === 'whole' ? '' : `.${step.half}`}`).join(' → ')}: ${error.message}`);
				}
			}
		}
		if (next.size === 0) {
			throw new Error(
				[
					`No order of this round's calls explains the store's answers, from any of the ${this.states.length} model state(s) kept.`,
					...failures,
					`The model state(s) before the round: ${this.states.map((state) => describeState(state)).join(' | or | ')}`,
				].join('\n'),
			);
		}
		this.states = [...next.values()];
	}

	/** A reserve whose answer was lost (its client crashed): it took effect, or it did not. */
	lostReserve(call: ReserveCall): void {
		const next = new Map<string, ModelState>();
		for (const state of this.states) {
			next.set(canonical(state), state);
			const applied = clone(state);
			reserve(applied, call, undefined);
			next.set(canonical(applied), applied);
		}
		this.states = [...next.values()];
	}

	/**
	 * A step that moves time for one key (lease or retention run out), with what the real row
	 * showed before it: keeps the states that agree with the row, and applies the change.
	 */
	timeStep(key: string, change: 'lease' | 'retention', rowSeen: { status: Status; hasLease: boolean } | undefined): void {
		const kept = this.states.filter((state) => {
			const row = state[key];
			if (!row || !rowSeen) return !row && !rowSeen;
			return row.status === rowSeen.status && (row.lease !== 'none') === rowSeen.hasLease;
		});
		if (kept.length === 0) {
			throw new Error(
				`Before moving the ${change} clock of ${key}, the store holds ${JSON.stringify(rowSeen ?? 'no row')}; the model state(s): ${this.states.map(describeState).join(' | or | ')}`,
			);
		}
		for (const state of kept) {
			const row = state[key];
			if (!row) continue;
			if (change === 'lease' && row.status === 'processing' && row.lease === 'live') row.lease = 'expired';
			if (change === 'retention') row.retentionPast = true;
		}
		this.states = kept;
	}

	/** Owner tokens the store hands out are fresh: never one handed out before. */
	private checkTokens(answers: CallAnswer[]): void {
		const fresh: string[] = [];
		for (const answer of answers) {
			if (answer.kind === 'reserve') for (const result of answer.results) if (result.ownerToken) fresh.push(result.ownerToken);
			if (answer.kind === 'claim') for (const result of answer.results) if (result.claimed) fresh.push(result.ownerToken);
		}
		for (const token of fresh) {
			if (this.issued.has(token)) throw new Error(`The store handed out owner token ${token} a second time.`);
			this.issued.add(token);
		}
	}

	/** What the model says the table holds, when every kept state agrees on a key; for the final check. */
	agreedRows(): { rows: ModelState; undecided: string[] } {
		const keys = new Set(this.states.flatMap((state) => Object.keys(state)));
		const rows: ModelState = {};
		const undecided: string[] = [];
		for (const key of keys) {
			const versions = new Set(this.states.map((state) => JSON.stringify(state[key] ?? null)));
			if (versions.size === 1 && this.states[0][key]) rows[key] = this.states[0][key];
			else if (versions.size > 1) undecided.push(key);
		}
		return { rows, undecided };
	}
}

/** A state in one line: per key its status, attempts, duplicates, lease, retention and owner. */
export function describeState(state: ModelState): string {
	const keys = Object.keys(state).sort();
	if (keys.length === 0) return '{}';
	return `{ ${keys
		.map((key) => {
			const row = state[key];
			const flags = [row.lease !== 'none' ? `lease ${row.lease}` : '', row.retentionPast ? 'retention past' : '', row.effectDone ? 'effect done' : '']
				.filter(Boolean)
				.join(', ');
			return `${key}: ${row.status} ×${row.attempts} dup ${row.duplicates}${flags ? ` (${flags})` : ''} owner ${row.owner.slice(0, 8)}`;
		})
		.join('; ')} }`;
}
