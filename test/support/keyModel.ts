// A small reference model of one key table, written from the store contract and the statements'
// documented rules (not from lib/store/rules.ts), and a checker that holds a store's answers to it.
// The model test (test/conformance/keyModel.test.ts) drives a real store with random rounds of
// calls and hands each round's answers here.
//
// Calls that run at the same time may take effect in any order, so the checker keeps, per key,
// every row some order of the calls so far explains (see KeyModel). A Postgres settle is two
// statements (the update, then a read of the keys it left unchanged to say why), so its two halves
// may be ordered apart.

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
export type ClaimSeen =
	| { claimed: true; ownerToken: string; record: RecordSeen }
	| { claimed: false; reason: string; record: RecordSeen | null };
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
function sameRecord(where: string, row: ModelRow, seen: RecordSeen | null): void {
	if (!seen) throw new Mismatch(`${where}: the model expects the stored record, the store answered none`);
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
			if (answer && answer[index].outcome !== 'new')
				throw new Mismatch(
					`reserve ${item.key} (item ${index}) outcome: the model expects "new", the store answered ${JSON.stringify(answer[index].outcome)}`,
				);
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
		same(
			`${where} payloadMismatch`,
			item.hash === null || row.payloadHash === null ? null : item.hash !== row.payloadHash,
			seen.payloadMismatch,
		);
		sameRecord(`${where} record`, row, seen.record);
	}
}

/** Owner tokens are UUIDs: the same token in upper or lower case is one token. */
const sameToken = (stored: string, given: string) => stored.toLowerCase() === given.toLowerCase();

/** Whether a settle item changes its key: the owner's token, and a state that settle accepts. */
function settles(kind: SettleCall['kind'], row: ModelRow | undefined, token: string): boolean {
	if (!row || !sameToken(row.owner, token)) return false;
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
		const reason = !row ? 'not_found' : !sameToken(row.owner, item.token) ? 'not_owner' : row.effectDone ? 'completed' : 'failed';
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
			same(
				`${where}`,
				{ claimed: false, reason: 'repeat_in_batch' },
				{ claimed: seen.claimed, reason: seen.claimed ? undefined : seen.reason },
			);
			if (row) sameRecord(`${where} record`, row, seen.record);
			else same(`${where} record`, null, seen.record);
			continue;
		}
		if (claimed.has(key)) {
			same(`${where} ownerToken`, row.owner, seen.claimed ? seen.ownerToken : null);
			sameRecord(`${where} record`, row, seen.record);
			continue;
		}
		const reason = !row ? 'not_found' : row.status === 'completed' ? 'completed' : 'in_progress';
		same(`${where}`, { claimed: false, reason }, { claimed: seen.claimed, reason: seen.claimed ? undefined : seen.reason });
		if (row) sameRecord(`${where} record`, row, seen.record);
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

/** One atomic step of a call on one key: a settle has two (its update, then its read of the reasons). */
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
	else if ((call.kind === 'complete' || call.kind === 'release' || call.kind === 'fail') && answer.kind === 'settle') {
		if (step.half === 'apply') settleApply(state, call, answer.results);
		else settleReasons(state, call, answer.results);
	} else throw new Mismatch(`${call.kind}: an answer of kind ${answer.kind}`);
}

function keysOf(call: StoreCall): string[] {
	if (call.kind === 'cleanup') return [];
	if (call.kind === 'claim' || call.kind === 'getKeys') return call.keys;
	return call.items.map((item) => item.key);
}

/** The part of a call, and of its answer, about one key (null when the call does not name it). */
function onKey(key: string, call: StoreCall, answer: CallAnswer | undefined): { call: StoreCall; answer: CallAnswer | undefined } | null {
	const keep = keysOf(call).map((named) => named === key);
	if (!keep.includes(true)) return null;
	const mine = <T>(list: T[]) => list.filter((_, index) => keep[index]);
	switch (call.kind) {
		case 'reserve':
			return {
				call: { ...call, items: mine(call.items) },
				answer: answer?.kind === 'reserve' ? { ...answer, results: mine(answer.results) } : answer,
			};
		case 'claim':
			return {
				call: { ...call, keys: mine(call.keys) },
				answer: answer?.kind === 'claim' ? { ...answer, results: mine(answer.results) } : answer,
			};
		case 'getKeys':
			return {
				call: { ...call, keys: mine(call.keys) },
				answer: answer?.kind === 'getKeys' ? { kind: 'getKeys', keys: key in answer.keys ? { [key]: answer.keys[key] } : {} } : answer,
			};
		case 'complete':
		case 'release':
		case 'fail':
			return {
				call: { ...call, items: mine(call.items) },
				answer: answer?.kind === 'settle' ? { ...answer, results: mine(answer.results) } : answer,
			};
		case 'cleanup':
			return null;
	}
}

/** A key's possible rows (null: not stored); two equal rows are one. */
type Candidates = Array<ModelRow | null>;
const distinct = (rows: Candidates): Candidates => [...new Map(rows.map((row) => [JSON.stringify(row), row])).values()];
const stateWith = (key: string, row: ModelRow | null): ModelState => (row ? { [key]: JSON.parse(JSON.stringify(row)) as ModelRow } : {});

/**
 * What the model allows the store to have answered, key by key. Each key's transitions depend on
 * that key's row alone, and the store promises each key's calls take effect one at a time (a row
 * lock, or the file's write lock), not that a batch over several keys is one atomic snapshot next
 * to a concurrent call: Postgres (read committed) lets a claim see a concurrent reservation's
 * update of one key but not its insert of another. So each key keeps the rows that some order of
 * the calls so far explains (a linearizability check per key): a round is accepted when, for
 * every key it names, at least one order of its calls' steps on that key, from at least one kept
 * row, gives exactly the answers seen.
 */
export class KeyModel {
	private rows = new Map<string, Candidates>();
	private issued = new Set<string>();

	private candidates(key: string): Candidates {
		return this.rows.get(key) ?? [null];
	}

	/** Holds one round of calls that ran at the same time (cleanup runs alone: see `cleanup`). Throws when no order explains the answers. */
	round(calls: StoreCall[], answers: CallAnswer[]): void {
		this.checkTokens(answers);
		const next = new Map<string, Candidates>();
		for (const key of new Set(calls.flatMap(keysOf))) {
			const parts = calls.map((call, index) => onKey(key, call, answers[index]));
			const named = parts.flatMap((part, index) => (part ? [{ ...part, index }] : []));
			const keyCalls = named.map((part) => part.call);
			const keyAnswers = named.map((part) => part.answer!);
			const kept: Candidates = [];
			const failures: string[] = [];
			for (const row of this.candidates(key)) {
				for (const order of interleavings(keyCalls.map(stepsOf))) {
					const state = stateWith(key, row);
					try {
						for (const step of order) runStep(state, step, keyCalls, keyAnswers);
						kept.push(state[key] ?? null);
					} catch (error) {
						if (!(error instanceof Mismatch)) throw error;
						const described = order
							.map((step) => `call ${named[step.call].index}${step.half === 'whole' ? '' : ` ${step.half}`}`)
							.join(' → ');
						if (failures.length < 6) failures.push(`  in the order ${described}: ${error.message}`);
					}
				}
			}
			if (kept.length === 0) {
				throw new Error(
					[
						`No order of this round's calls on ${key} explains the store's answers, from any of the ${this.candidates(key).length} row(s) the model holds possible for it.`,
						...failures,
						`The model's possible row(s) of ${key} before the round: ${this.candidates(key)
							.map((row) => describeRow(key, row))
							.join(' | or | ')}`,
					].join('\n'),
				);
			}
			next.set(key, distinct(kept));
		}
		for (const [key, kept] of next) this.rows.set(key, kept);
	}

	/** Cleanup, run alone: it deletes every key whose retention ended and no lease holds; the count must add up. */
	cleanup(answer: { deleted: number; finished: boolean }): void {
		same('cleanup finished', true, answer.finished);
		// Per key, each possible row's share of the count and what is left of it.
		const keys = [...this.rows.keys()];
		const options = keys.map((key) =>
			this.candidates(key).map((row) => ({ doomed: row !== null && ended(row), row: row && ended(row) ? null : row })),
		);
		const kept = keys.map((): Candidates => []);
		const walk = (index: number, count: number, chosen: Array<{ row: ModelRow | null }>) => {
			if (index === keys.length) {
				if (count === answer.deleted) chosen.forEach((option, at) => kept[at].push(option.row));
				return;
			}
			for (const option of options[index]) walk(index + 1, count + (option.doomed ? 1 : 0), [...chosen, option]);
		};
		walk(0, 0, []);
		if (keys.length === 0 ? answer.deleted !== 0 : kept[0].length === 0) {
			throw new Error(`cleanup deleted ${answer.deleted}; the model's possible rows: ${this.describe()}`);
		}
		keys.forEach((key, index) => this.rows.set(key, distinct(kept[index])));
	}

	/** A reserve whose answer was lost (its client crashed): on each key it took effect, or it did not. */
	lostReserve(call: ReserveCall): void {
		for (const key of new Set(keysOf(call))) {
			const part = onKey(key, call, undefined)!.call as ReserveCall;
			const after = this.candidates(key).flatMap((row) => {
				const state = stateWith(key, row);
				reserve(state, part, undefined);
				return [row, state[key] ?? null];
			});
			this.rows.set(key, distinct(after));
		}
	}

	/**
	 * A step that moves time for one key (lease or retention run out), with what the real row
	 * showed before it: keeps the rows that agree with it, and applies the change.
	 */
	timeStep(key: string, change: 'lease' | 'retention', rowSeen: { status: Status; hasLease: boolean } | undefined): void {
		const kept = this.candidates(key).filter((row) => {
			if (!row || !rowSeen) return !row && !rowSeen;
			return row.status === rowSeen.status && (row.lease !== 'none') === rowSeen.hasLease;
		});
		if (kept.length === 0) {
			throw new Error(
				`Before its ${change} runs out, ${key} is stored as ${JSON.stringify(rowSeen ?? 'no row')}; the model: ${this.describe()}`,
			);
		}
		this.rows.set(
			key,
			distinct(
				kept.map((row) => {
					if (!row) return row;
					const changed = { ...row };
					if (change === 'lease' && row.status === 'processing' && row.lease === 'live') changed.lease = 'expired';
					if (change === 'retention') changed.retentionPast = true;
					return changed;
				}),
			),
		);
	}

	/** Owner tokens the store hands out are fresh: never one handed out before. */
	private checkTokens(answers: CallAnswer[]): void {
		for (const answer of answers) {
			const fresh =
				answer.kind === 'reserve'
					? answer.results.flatMap((result) => (result.ownerToken ? [result.ownerToken] : []))
					: answer.kind === 'claim'
						? answer.results.flatMap((result) => (result.claimed ? [result.ownerToken] : []))
						: [];
			for (const token of fresh) {
				if (this.issued.has(token)) throw new Error(`The store handed out owner token ${token} a second time.`);
				this.issued.add(token);
			}
		}
	}

	/** The keys whose row the model knows for sure (one possible row), for the final check. */
	knownRows(): Map<string, ModelRow | null> {
		const known = new Map<string, ModelRow | null>();
		for (const [key, candidates] of this.rows) if (candidates.length === 1) known.set(key, candidates[0]);
		return known;
	}

	describe(): string {
		const keys = [...this.rows.keys()].sort();
		return keys.length === 0
			? 'no keys'
			: keys
					.map((key) =>
						this.candidates(key)
							.map((row) => describeRow(key, row))
							.join(' or '),
					)
					.join('; ');
	}
}

/** A row in one line: its status, attempts, duplicates, lease, retention and owner. */
export function describeRow(key: string, row: ModelRow | null): string {
	if (!row) return `${key}: not stored`;
	const flags = [
		row.lease !== 'none' ? `lease ${row.lease}` : '',
		row.retentionPast ? 'retention past' : '',
		row.effectDone ? 'effect done' : '',
	]
		.filter(Boolean)
		.join(', ');
	return `${key}: ${row.status} ×${row.attempts} dup ${row.duplicates}${flags ? ` (${flags})` : ''} owner ${row.owner.slice(0, 8)}`;
}
