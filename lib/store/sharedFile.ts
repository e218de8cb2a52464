import { IdempotencyError } from '../errors';

/*
 * When the embedded store may run in n8n's queue mode. One key file is atomic only for processes
 * that open the same file; a worker on another host opens its own and would let duplicates through.
 * So every process compares its file's store id (a random id written once into the file) with the
 * ids recorded for the workflow in n8n's own shared database, and proceeds only when its id is the
 * one and only id recorded, and was recorded long enough ago that a process that raced it at first
 * use has been seen.
 *
 * Why the settle window: the record lives in the workflow's data, which n8n saves whole at the end
 * of a run (last writer wins). Two hosts that both start their first run before either has saved
 * both see no record; the later save erases the earlier id. Without a window, the first host could
 * proceed on its own id until the second host's save lands, and the second proceed after it: two
 * files in use at once. Ids are only ever added, so once both are recorded both refuse for good;
 * the window keeps the first host from proceeding while the second host's save can still come.
 *
 *   host A: load(no ids) ─ record A, refuse ─ save {A} ────────────── ... A may proceed from tA + window
 *   host B:   load(no ids) ─ record B, refuse ──────── save {B} (A lost) ─ B's next run: {B}
 *   host A's next run after B's save: {B} → records A too → {A, B}: both refuse from then on
 */

/** The default settle window: longer than a first (refused) run takes from loading the workflow to saving it. */
export const DEFAULT_SETTLE_SECONDS = 120;

/** Every store id recorded for a workflow, with when it was first recorded (milliseconds since the epoch). */
export type RecordedStoreFiles = Record<string, number>;

/** Queue mode, and this process's key file is not yet known to be the only one: nothing was reserved; retrying later can work. */
export class EmbeddedStoreNotConfirmedError extends IdempotencyError {}

/** Queue mode, and the workflow's runs use more than one key file (several hosts or n8n folders): refused for good. */
export class EmbeddedStoreNotSharedError extends IdempotencyError {}

export interface SharedFileCheck {
	/** What the workflow's shared data holds under the package's record (anything: it is validated here). */
	recorded: unknown;
	/** This process's file's store id. */
	storeId: string;
	/** Where this process's file is, for the messages. */
	file: string;
	/** Now, in milliseconds since the epoch (this host's clock; only processes on one host share an id). */
	now: number;
	settleSeconds: number;
	/** Whether n8n saves what this run records (it does not for manual runs). */
	canRecord: boolean;
}

export interface SharedFileVerdict {
	proceed: boolean;
	/** Why not, when the run must not use the store. */
	error?: IdempotencyError;
	/** The record to store in the workflow's shared data, when it changed. */
	record?: RecordedStoreFiles;
}

/** Whether this n8n process runs in queue mode: EXECUTIONS_MODE=queue, or the process is an n8n worker or webhook process (they force queue mode). */
export function isQueueMode(executionsMode: string | undefined, argv: readonly string[]): boolean {
	if (executionsMode?.trim() === 'queue') return true;
	const command = argv.slice(2).find((argument) => !argument.startsWith('-'));
	return command === 'worker' || command === 'webhook';
}

/** The settle window from its environment value; anything not a finite number ≥ 0 gives the default. */
export function settleSeconds(value: string | undefined): number {
	if (value === undefined || value.trim() === '') return DEFAULT_SETTLE_SECONDS;
	const seconds = Number(value);
	return Number.isFinite(seconds) && seconds >= 0 ? seconds : DEFAULT_SETTLE_SECONDS;
}

/**
 * The queue-mode rule, for one run of one workflow. Outcomes, in order:
 * - this id not recorded: record it; refuse (another id recorded: for good; none: retry later);
 * - another id recorded too: refuse for good;
 * - only this id, recorded less than the settle window ago: refuse, retry later;
 * - only this id, recorded long enough ago: proceed.
 * An unreadable record counts as another file: refused, never proceeded on.
 */
export function sharedFileVerdict(check: SharedFileCheck): SharedFileVerdict {
	const { recorded, others } = readRecord(check.recorded, check.storeId);
	const ownSince = recorded[check.storeId];
	if (ownSince === undefined) {
		if (!check.canRecord) return { proceed: false, error: cannotRecord(check, others) };
		const record = { ...recorded, [check.storeId]: check.now };
		return { proceed: false, record, error: others.length > 0 ? notShared(check, others) : firstUse(check) };
	}
	if (others.length > 0) return { proceed: false, error: notShared(check, others) };
	// A clock that stepped back would otherwise hold the store shut until it caught up.
	if (ownSince > check.now) return { proceed: false, record: { ...recorded, [check.storeId]: check.now }, error: notSettled(check, 0) };
	const waitedSeconds = (check.now - ownSince) / 1000;
	if (waitedSeconds < check.settleSeconds) return { proceed: false, error: notSettled(check, waitedSeconds) };
	return { proceed: true };
}

function readRecord(value: unknown, storeId: string): { recorded: RecordedStoreFiles; others: string[] } {
	if (value === undefined || value === null) return { recorded: {}, others: [] };
	if (typeof value !== 'object' || Array.isArray(value)) return { recorded: { unreadable: Number.NaN }, others: ['unreadable'] };
	const recorded: RecordedStoreFiles = {};
	for (const [id, since] of Object.entries(value as Record<string, unknown>)) {
		// A value that is not a time is kept as it is and counts as another file.
		recorded[id] = typeof since === 'number' && Number.isFinite(since) ? since : Number.NaN;
	}
	if (Number.isNaN(recorded[storeId])) delete recorded[storeId];
	return { recorded, others: Object.keys(recorded).filter((id) => id !== storeId) };
}

const NOTHING_RESERVED = 'Nothing was reserved.';
const USE_POSTGRES =
	'For workers on several hosts choose Store: Postgres; for queue mode on one host give the main process and every worker the same n8n folder (N8N_USER_FOLDER).';

function firstUse(check: SharedFileCheck): EmbeddedStoreNotConfirmedError {
	return new EmbeddedStoreNotConfirmedError(
		`n8n runs in queue mode: the embedded key store is used only once every n8n process is known to open the same key file. This run recorded this process's file (${check.file}, store id ${check.storeId}) for the workflow. ${NOTHING_RESERVED} Deliveries are refused for ${check.settleSeconds} s after this first record, so a process with another file that started at the same time is seen first; the provider's retry after that is processed. ${USE_POSTGRES}`,
	);
}

function notSettled(check: SharedFileCheck, waitedSeconds: number): EmbeddedStoreNotConfirmedError {
	const left = Math.max(1, Math.ceil(check.settleSeconds - waitedSeconds));
	return new EmbeddedStoreNotConfirmedError(
		`n8n runs in queue mode: this process's key file (${check.file}, store id ${check.storeId}) was recorded for the workflow ${Math.floor(waitedSeconds)} s ago, and the embedded store waits ${check.settleSeconds} s after the first record before it is used, so a process with another file that started at the same time is seen first. ${NOTHING_RESERVED} Retry in ${left} s. ${USE_POSTGRES}`,
	);
}

function notShared(check: SharedFileCheck, others: string[]): EmbeddedStoreNotSharedError {
	return new EmbeddedStoreNotSharedError(
		`n8n runs in queue mode and this workflow's runs have used ${others.length + 1} different embedded key files (this process: ${check.file}, store id ${check.storeId}; others: ${others.join(', ')}): processes that do not share one file each keep their own keys and would let duplicates through, so the embedded store refuses. ${NOTHING_RESERVED} ${USE_POSTGRES} If a key file was replaced on purpose (a new n8n folder), its keys are gone anyway: start again with a copy of the workflow (its record starts empty) or move to Postgres.`,
	);
}

function cannotRecord(check: SharedFileCheck, others: string[]): IdempotencyError {
	if (others.length > 0) return notShared(check, others);
	return new EmbeddedStoreNotConfirmedError(
		`n8n runs in queue mode: the embedded key store is used only once every n8n process is known to open the same key file, and this process's file (${check.file}, store id ${check.storeId}) is not recorded for the workflow yet. n8n does not save what a manual run records: activate the workflow and let one delivery record it (that delivery is refused and retried), then wait ${check.settleSeconds} s. ${NOTHING_RESERVED} ${USE_POSTGRES}`,
	);
}
