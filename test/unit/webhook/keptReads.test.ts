import { KeptReads, type KeptRead } from '../../../lib/webhook/keptReads';

// The trigger's kept copies of its credential reads (signing secrets here), on a clock the test moves.

const TIMINGS = { acceptForMs: 5_000, rereadAfterMs: 1_000 };

function cacheWithClock() {
	let now = 1_000_000;
	const cache = new KeptReads<readonly string[]>(TIMINGS, () => now);
	let stored: readonly string[] = ['first'];
	let reads = 0;
	let failing = false;
	const read = async (): Promise<readonly string[]> => {
		reads++;
		if (failing) throw new Error('credential unreadable');
		return stored;
	};
	return {
		cache,
		read,
		advance: (ms: number) => void (now += ms),
		save: (secrets: readonly string[]) => void (stored = secrets),
		fail: (value: boolean) => void (failing = value),
		reads: () => reads,
	};
}

describe('KeptReads', () => {
	it('answers from one read for as long as the copy may be accepted, then reads again', async () => {
		const t = cacheWithClock();
		expect((await t.cache.current('a', t.read)).value).toEqual(['first']);
		t.save(['second']);
		t.advance(4_999);
		expect((await t.cache.current('a', t.read)).value).toEqual(['first']);
		expect(t.reads()).toBe(1);
		t.advance(1);
		expect((await t.cache.current('a', t.read)).value).toEqual(['second']);
		expect(t.reads()).toBe(2);
	});

	it('shares one read among the requests that arrive while it runs', async () => {
		const t = cacheWithClock();
		const all = await Promise.all(Array.from({ length: 10 }, async () => await t.cache.current('a', t.read)));
		expect(new Set(all).size).toBe(1);
		expect(t.reads()).toBe(1);
	});

	it('after a mismatch: no new read within a second of the copy, a new read after it, a newer copy another request read meanwhile without one', async () => {
		const t = cacheWithClock();
		const used = await t.cache.current('a', t.read);
		t.save(['rotated']);
		t.advance(999);
		expect(await t.cache.fresh('a', t.read, used)).toBeUndefined();
		t.advance(1);
		expect((await t.cache.fresh('a', t.read, used))?.value).toEqual(['rotated']);
		expect(t.reads()).toBe(2);
		// A request that verified with the first copy, asking after the new read: it gets that read.
		expect((await t.cache.fresh('a', t.read, used))?.value).toEqual(['rotated']);
		expect((await t.cache.current('a', t.read)).value).toEqual(['rotated']);
		expect(t.reads()).toBe(2);
	});

	it('keeps no failed read: the next request reads again, and the failure reaches the caller', async () => {
		const t = cacheWithClock();
		t.fail(true);
		await expect(t.cache.current('a', t.read)).rejects.toThrow('credential unreadable');
		t.fail(false);
		expect((await t.cache.current('a', t.read)).value).toEqual(['first']);
		expect(t.reads()).toBe(2);
	});

	it('a failed new read after a mismatch fails the request and leaves no copy', async () => {
		const t = cacheWithClock();
		const used: KeptRead<readonly string[]> = await t.cache.current('a', t.read);
		t.advance(1_000);
		t.fail(true);
		await expect(t.cache.fresh('a', t.read, used)).rejects.toThrow('credential unreadable');
		t.fail(false);
		expect((await t.cache.current('a', t.read)).value).toEqual(['first']);
		expect(t.reads()).toBe(3);
	});

	it('keeps each credential apart, and clear() forgets them all', async () => {
		const t = cacheWithClock();
		await t.cache.current('a', t.read);
		await t.cache.current('b', t.read);
		expect(t.reads()).toBe(2);
		t.cache.clear();
		await t.cache.current('a', t.read);
		expect(t.reads()).toBe(3);
	});
});
