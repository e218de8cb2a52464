/*
 * Credential reads kept between deliveries, in this process only.
 *
 * A trigger that reads a credential on every request pays for the read on every duplicate and every
 * forgery (in n8n a credential read outside an execution costs an expression runtime of its own).
 * The copy kept here bounds both sides of a change to the credential:
 *
 * - A value the user replaces is still used for at most `acceptForMs` after it was last read (a
 *   removed signing secret still accepted, a changed Postgres credential still connected with).
 * - Where an old copy would refuse what a new one accepts (a signature made with a secret saved just
 *   now), the caller asks for a fresh read: it reads the credential again, unless the copy was read
 *   less than `rereadAfterMs` ago (then the refusal stands and the provider's retry is checked
 *   against a new read). Forgeries therefore cause at most one read per `rereadAfterMs` per credential.
 *
 * A failed read is never kept: the next request reads again.
 */

export interface KeptReadTimings {
	acceptForMs: number;
	rereadAfterMs: number;
}

// A fresh read only once the copy has aged out anyway: under a flood of forgeries a process reads at
// most once a second, as for copies (each read outside an execution costs n8n an expression isolate).
export const KEPT_READ_TIMINGS: KeptReadTimings = { acceptForMs: 1_000, rereadAfterMs: 1_000 };

/** The value one request used, and when it was read. */
export interface KeptRead<T> {
	readonly value: T;
	readonly readAt: number;
}

interface Entry<T> {
	readonly pending: Promise<KeptRead<T>>;
}

/** Enough for every trigger of one n8n; beyond it the oldest entry goes. */
const MAX_ENTRIES = 1_000;

export class KeptReads<T> {
	private readonly entries = new Map<string, Entry<T>>();

	constructor(
		private readonly timings: KeptReadTimings = KEPT_READ_TIMINGS,
		private readonly now: () => number = Date.now,
	) {}

	/** The value for `id`: the copy read within `acceptForMs`, else a new read (shared by requests arriving meanwhile). */
	async current(id: string, read: () => Promise<T>): Promise<KeptRead<T>> {
		const entry = this.entries.get(id);
		if (entry) {
			const copy = await entry.pending.catch(() => undefined);
			if (copy && this.now() - copy.readAt < this.timings.acceptForMs) return copy;
		}
		return await this.readInto(id, read, entry);
	}

	/**
	 * After `used` refused something: the value read anew, or undefined when `used` was read less
	 * than `rereadAfterMs` ago (the refusal stands). A newer copy another request read meanwhile is
	 * returned without a read.
	 */
	async fresh(id: string, read: () => Promise<T>, used: KeptRead<T>): Promise<KeptRead<T> | undefined> {
		const entry = this.entries.get(id);
		const copy = entry ? await entry.pending.catch(() => undefined) : undefined;
		if (copy && copy.readAt > used.readAt) return copy;
		if (this.now() - used.readAt < this.timings.rereadAfterMs) return undefined;
		return await this.readInto(id, read, this.entries.get(id));
	}

	/** Forgets every copy (a process's credentials changed wholesale; tests). */
	clear(): void {
		this.entries.clear();
	}

	private async readInto(id: string, read: () => Promise<T>, replacing: Entry<T> | undefined): Promise<KeptRead<T>> {
		const current = this.entries.get(id);
		// Another request started a read since `replacing` was seen: share it.
		if (current && current !== replacing) {
			const copy = await current.pending.catch(() => undefined);
			if (copy) return copy;
		}
		// Stamped when the read starts: the copy is at least as new as that.
		const readAt = this.now();
		const pending = (async (): Promise<KeptRead<T>> => ({ value: await read(), readAt }))();
		const entry: Entry<T> = { pending };
		this.entries.delete(id);
		this.entries.set(id, entry);
		if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
		pending.catch(() => {
			if (this.entries.get(id) === entry) this.entries.delete(id);
		});
		return await pending;
	}
}
