import { IdempotencyError } from '../../errors';

/*
 * When the embedded store may run in n8n's queue mode. One key file is atomic only for processes
 * that open the same file; a worker on another host (or with its own n8n folder) opens its own file
 * and would let duplicates through. Each file carries a random store id written once when the file
 * is created. In queue mode the deployment names the one file its processes must use, by that id
 * (IDEMPOTENCY_EMBEDDED_STORE_ID, set on main and on every worker); each process compares the id of
 * the file it opened with it and proceeds only when they are equal. Two files never share an id,
 * so two processes with different files can never both proceed: refused, never a silent duplicate.
 *
 * Why not a record in n8n's own database: a worker runs a new execution without reloading the
 * workflow's static data, and n8n's deduplication records are read, changed and written back
 * without a lock, so neither lets every process see one shared answer at once.
 */

/** The environment variable that names the deployment's key file by its store id. */
export const STORE_ID_ENV = 'IDEMPOTENCY_EMBEDDED_STORE_ID';

/** Queue mode without the deployment's store id configured: nothing was reserved; the message says what to set. */
export class EmbeddedStoreNotConfirmedError extends IdempotencyError {}

/** Queue mode, and this process's key file is not the one the deployment names: refused. */
export class EmbeddedStoreNotSharedError extends IdempotencyError {}

export interface SharedFileCheck {
	/** The store id the deployment names (the environment variable), as given. */
	configuredId: string | undefined;
	/** This process's file's store id. */
	storeId: string;
	/** Where this process's file is, for the messages. */
	file: string;
}

export interface SharedFileVerdict {
	proceed: boolean;
	/** Why not, when the run must not use the store. */
	error?: IdempotencyError;
}

/** Whether this n8n process runs in queue mode: EXECUTIONS_MODE=queue, or the process is an n8n worker or webhook process (they force queue mode). */
export function isQueueMode(executionsMode: string | undefined, argv: readonly string[]): boolean {
	if (executionsMode?.trim() === 'queue') return true;
	const command = argv.slice(2).find((argument) => !argument.startsWith('-'));
	return command === 'worker' || command === 'webhook';
}

/** The queue-mode rule for one process: proceed only on the file the deployment names. */
export function sharedFileVerdict(check: SharedFileCheck): SharedFileVerdict {
	const configured = check.configuredId?.trim() ?? '';
	if (configured === '') return { proceed: false, error: notConfigured(check) };
	if (configured !== check.storeId) return { proceed: false, error: notShared(check, configured) };
	return { proceed: true };
}

const NOTHING_RESERVED = 'Nothing was reserved.';
const USE_POSTGRES = 'For workers on several hosts choose Store: Postgres.';

function notConfigured(check: SharedFileCheck): EmbeddedStoreNotConfirmedError {
	return new EmbeddedStoreNotConfirmedError(
		`n8n runs in queue mode: the embedded key store is used only when every n8n process opens the same key file. This process's file is ${check.file} (store id ${check.storeId}). ${NOTHING_RESERVED} On one host, give the main process, every worker and every webhook process the same n8n folder (N8N_USER_FOLDER) and set ${STORE_ID_ENV}=${check.storeId} on all of them, then restart them. ${USE_POSTGRES}`,
	);
}

function notShared(check: SharedFileCheck, configured: string): EmbeddedStoreNotSharedError {
	return new EmbeddedStoreNotSharedError(
		`n8n runs in queue mode and this process opened a different embedded key file (${check.file}, store id ${check.storeId}) from the one ${STORE_ID_ENV} names (${configured}): its workers do not share one file, and using it could let duplicates through. ${NOTHING_RESERVED} Give every process the same n8n folder on one host, or choose Store: Postgres.`,
	);
}
