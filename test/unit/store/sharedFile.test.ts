import {
	DEFAULT_SETTLE_SECONDS,
	EmbeddedStoreNotConfirmedError,
	EmbeddedStoreNotSharedError,
	isQueueMode,
	settleSeconds,
	sharedFileVerdict,
	type SharedFileCheck,
} from '../../../lib/store/sharedFile';

const OWN = 'own-id';
const OTHER = 'other-id';
const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const SETTLE = 120;

const check = (recorded: unknown, extra: Partial<SharedFileCheck> = {}): SharedFileCheck => ({
	recorded,
	storeId: OWN,
	file: '/n8n/storage/n8n-nodes-idempotency/keys.sqlite',
	now: NOW,
	settleSeconds: SETTLE,
	canRecord: true,
	...extra,
});

describe('sharedFileVerdict (queue mode)', () => {
	it('first use: records this file and refuses this run, with a retry', () => {
		const verdict = sharedFileVerdict(check(undefined));
		expect(verdict.proceed).toBe(false);
		expect(verdict.record).toEqual({ [OWN]: NOW });
		expect(verdict.error).toBeInstanceOf(EmbeddedStoreNotConfirmedError);
		expect(verdict.error!.message).toMatch(/Nothing was reserved/);
		expect(verdict.error!.message).toMatch(/Postgres/);
	});

	it('only this file, recorded less than the settle window ago: refuses, changes nothing', () => {
		const verdict = sharedFileVerdict(check({ [OWN]: NOW - (SETTLE - 1) * 1000 }));
		expect(verdict).toEqual({ proceed: false, error: expect.any(EmbeddedStoreNotConfirmedError) });
		expect(verdict.error!.message).toMatch(/Retry in 1 s/);
	});

	it('only this file, recorded the settle window ago or longer: proceeds', () => {
		expect(sharedFileVerdict(check({ [OWN]: NOW - SETTLE * 1000 }))).toEqual({ proceed: true });
		expect(sharedFileVerdict(check({ [OWN]: NOW - 86_400_000 }))).toEqual({ proceed: true });
	});

	it('a settle window of 0 proceeds on the run after the first record', () => {
		expect(sharedFileVerdict(check({ [OWN]: NOW }, { settleSeconds: 0 }))).toEqual({ proceed: true });
	});

	it('another file recorded, this one not: adds this one and refuses for good (so the other process refuses too)', () => {
		const verdict = sharedFileVerdict(check({ [OTHER]: NOW - 3_600_000 }));
		expect(verdict.proceed).toBe(false);
		expect(verdict.record).toEqual({ [OTHER]: NOW - 3_600_000, [OWN]: NOW });
		expect(verdict.error).toBeInstanceOf(EmbeddedStoreNotSharedError);
		expect(verdict.error!.message).toMatch(/Store: Postgres/);
		expect(verdict.error!.message).toMatch(/same n8n folder/);
	});

	it('this file and another recorded: refuses for good, however old the records', () => {
		const verdict = sharedFileVerdict(check({ [OWN]: NOW - 86_400_000, [OTHER]: NOW - 86_400_000 }));
		expect(verdict).toEqual({ proceed: false, error: expect.any(EmbeddedStoreNotSharedError) });
	});

	// The race at first use: hosts A and B both load the workflow before either saved its record.
	it('two hosts racing at first use never both proceed', () => {
		const settle = 60;
		const at = (seconds: number) => NOW + seconds * 1000;
		// A's first run (t=0) records {A}; B's first run loaded before A's save and records {B}, saved at t=30 (A's record lost).
		const aFirst = sharedFileVerdict(check(undefined, { storeId: 'A', now: at(0), settleSeconds: settle }));
		const bFirst = sharedFileVerdict(check(undefined, { storeId: 'B', now: at(1), settleSeconds: settle }));
		expect([aFirst.proceed, bFirst.proceed]).toEqual([false, false]);
		// Between A's save (t=1) and B's save (t=30), A reads {A}: still inside the window.
		expect(sharedFileVerdict(check(aFirst.record, { storeId: 'A', now: at(29), settleSeconds: settle })).proceed).toBe(false);
		// After B's save the record is {B}: A adds itself and refuses; from then on both refuse.
		const aAfter = sharedFileVerdict(check(bFirst.record, { storeId: 'A', now: at(31), settleSeconds: settle }));
		expect(aAfter.proceed).toBe(false);
		expect(sharedFileVerdict(check(aAfter.record, { storeId: 'B', now: at(3600), settleSeconds: settle })).proceed).toBe(false);
		expect(sharedFileVerdict(check(aAfter.record, { storeId: 'A', now: at(3600), settleSeconds: settle })).proceed).toBe(false);
	});

	it('a manual run (n8n does not save what it records) records nothing and says how to record', () => {
		const verdict = sharedFileVerdict(check(undefined, { canRecord: false }));
		expect(verdict.proceed).toBe(false);
		expect(verdict.record).toBeUndefined();
		expect(verdict.error!.message).toMatch(/manual run/);
		expect(sharedFileVerdict(check({ [OTHER]: 0 }, { canRecord: false })).error).toBeInstanceOf(EmbeddedStoreNotSharedError);
		expect(sharedFileVerdict(check({ [OWN]: NOW - 86_400_000 }, { canRecord: false }))).toEqual({ proceed: true });
	});

	it('a record time in the future (the clock stepped back) is recorded again as now, and refused this run', () => {
		const verdict = sharedFileVerdict(check({ [OWN]: NOW + 3_600_000 }));
		expect(verdict.proceed).toBe(false);
		expect(verdict.record).toEqual({ [OWN]: NOW });
	});

	it.each([
		['a string', 'garbage'],
		['an array', [OWN]],
		['a number', 42],
	])('an unreadable record (%s) counts as another file: refused, never proceeded on', (_name, recorded) => {
		const verdict = sharedFileVerdict(check(recorded));
		expect(verdict.proceed).toBe(false);
		expect(verdict.error).toBeInstanceOf(EmbeddedStoreNotSharedError);
	});

	it('an entry that is not a time counts as another file; this file\'s own bad entry is recorded again', () => {
		expect(sharedFileVerdict(check({ [OWN]: NOW - 86_400_000, [OTHER]: 'x' })).error).toBeInstanceOf(EmbeddedStoreNotSharedError);
		const verdict = sharedFileVerdict(check({ [OWN]: null }));
		expect(verdict.record).toEqual({ [OWN]: NOW });
		expect(verdict.error).toBeInstanceOf(EmbeddedStoreNotConfirmedError);
	});
});

describe('isQueueMode', () => {
	it.each([
		['EXECUTIONS_MODE=queue', 'queue', ['node', 'n8n', 'start'], true],
		['EXECUTIONS_MODE=queue (with spaces, as a _FILE may give)', 'queue\n', ['node', 'n8n'], true],
		['an n8n worker without EXECUTIONS_MODE (n8n forces queue mode)', undefined, ['node', 'n8n', 'worker', '--concurrency=5'], true],
		['an n8n webhook process', undefined, ['node', 'n8n', 'webhook'], true],
		['EXECUTIONS_MODE=regular', 'regular', ['node', 'n8n', 'start'], false],
		['n8n start', undefined, ['node', 'n8n', 'start'], false],
		['n8n with no command', undefined, ['node', 'n8n'], false],
		['a flag named like a command', undefined, ['node', 'n8n', '--worker'], false],
	])('%s', (_name, mode, argv, expected) => {
		expect(isQueueMode(mode as string | undefined, argv as string[])).toBe(expected);
	});
});

describe('settleSeconds', () => {
	it.each([
		[undefined, DEFAULT_SETTLE_SECONDS],
		['', DEFAULT_SETTLE_SECONDS],
		['5', 5],
		['0', 0],
		['-1', DEFAULT_SETTLE_SECONDS],
		['soon', DEFAULT_SETTLE_SECONDS],
		['Infinity', DEFAULT_SETTLE_SECONDS],
	])('%p gives %p', (value, expected) => {
		expect(settleSeconds(value)).toBe(expected);
	});
});
