/*
 * Signing secrets kept between deliveries, in this process only.
 *
 * A trigger that reads its secret on every request pays for the read on every duplicate and every
 * forgery (in n8n a credential read costs an expression runtime of its own). The copy kept here
 * bounds both sides of a change to the credential:
 *
 * - A secret the user removes is still accepted for at most `acceptForMs` after it was last read.
 * - A signature made with a secret the user just saved is never refused on an old copy: a
 *   mismatch reads the credential again, unless the copy was read less than `rereadAfterMs` ago
 *   (then the refusal stands and the provider's retry is checked against a new read). Forgeries
 *   therefore cause at most one read per `rereadAfterMs` per credential.
 *
 * A failed read is never kept: the next request reads again.
 */

export interface SecretCacheTimings {
	acceptForMs: number;
	rereadAfterMs: number;
}

export const SECRET_CACHE_TIMINGS: SecretCacheTimings = { acceptForMs: 1_000, rereadAfterMs: 250 };

/** The secrets one request verified with, and when they were read. */
export interface SecretsRead {
	readonly secrets: readonly string[];
	readonly readAt: number;
}

type Read = () => Promise<readonly string[]>;

interface Entry {
	readonly pending: Promise<SecretsRead>;
}

/** Enough for every signed trigger of one n8n; beyond it the oldest entry goes. */
const MAX_ENTRIES = 1_000;

export class SecretCache {
	private readonly entries = new Map<string, Entry>();

	constructor(
		private readonly timings: SecretCacheTimings = SECRET_CACHE_TIMINGS,
		private readonly now: () => number = Date.now,
	) {}

	/** The secrets for `id`: the copy read within `acceptForMs`, else a new read (shared by requests arriving meanwhile). */
	async current(id: string, read: Read): Promise<SecretsRead> {
		const entry = this.entries.get(id);
		if (entry) {
			const copy = await entry.pending.catch(() => undefined);
			if (copy && this.now() - copy.readAt < this.timings.acceptForMs) return copy;
		}
		return await this.readInto(id, read, entry);
	}

	/**
	 * After a signature did not match `used`: the secrets read anew, or undefined when `used` was
	 * read less than `rereadAfterMs` ago (the refusal stands). A newer copy another request read
	 * meanwhile is returned without a read.
	 */
	async fresh(id: string, read: Read, used: SecretsRead): Promise<SecretsRead | undefined> {
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

	private async readInto(id: string, read: Read, replacing: Entry | undefined): Promise<SecretsRead> {
		const current = this.entries.get(id);
		// Another request started a read since `replacing` was seen: share it.
		if (current && current !== replacing) {
			const copy = await current.pending.catch(() => undefined);
			if (copy) return copy;
		}
		// Stamped when the read starts: the copy is at least as new as that.
		const readAt = this.now();
		const pending = (async (): Promise<SecretsRead> => ({ secrets: await read(), readAt }))();
		const entry: Entry = { pending };
		this.entries.delete(id);
		this.entries.set(id, entry);
		if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
		pending.catch(() => {
			if (this.entries.get(id) === entry) this.entries.delete(id);
		});
		return await pending;
	}
}
