import { UnexpectedResultError } from '../../errors';
import { assertExactText, inexactTextReason } from '../../keys/exactText';
import type {
	KeyDriver,
	KeyStatements,
	KeyText,
	OrderStatements,
	RowReader,
	SendRule,
	Statement,
	StatementResult,
	StoreDriver,
	StoreOperation,
} from '../driver';
import { ownerTokenText } from '../rules';
import { readAllOffThread, type ThreadStatement, type ThreadWriteResult } from './backgroundThread';
import {
	DEFAULT_LOCK_WAIT_MS,
	allAsArrays,
	assertSameFile,
	connectionFor,
	namedStatement,
	read,
	withLosableWrite,
	withUnsyncedWrite,
	withWriteLock,
	withWriteSyncedWhen,
	writeOnThread,
	type EmbeddedConnection,
	type LockWait,
	type ThreadCommit,
} from './connection';
import { ensureTable } from './migrations';
import type { SqlSection } from '../sqlText';
import { embeddedTableName, renderEmbeddedStatement, type EmbeddedStatement } from './statements';

export interface EmbeddedStoreOptions {
	/** The store file (created with its folder when missing). */
	file: string;
	/** The table's name in the file (default processed_events; object_versions for the Order Guard). */
	table?: string;
	/** Create the table (or bring it to the package's schema version) on first use; default true. */
	createTable?: boolean;
	/** How long a call waits, asynchronously, for another process's write lock (ms; default 10 s). */
	lockWaitMs?: number;
}

/**
 * Rows deleted per cleanup statement at most: one chunk keeps the event loop busy a few
 * milliseconds (n8n's other executions run between chunks), whatever batch size the node asks for.
 */
export const CLEANUP_CHUNK_ROWS = 1_000;

/**
 * A write of at least this many keys (a reservation's distinct keys, a settle's items) runs on the
 * store's background thread: its statement, commit and fsync take milliseconds per hundred keys
 * (far more on a large table of random keys), which n8n's event loop would otherwise wait for.
 * Fewer keys run on the event loop's thread, where one key costs a fraction of a millisecond and
 * no message to the thread.
 */
export const OFF_THREAD_KEYS = 100;

type Row = Record<string, unknown>;
type Parameters = Record<string, unknown>;

/** Seconds as whole milliseconds, the unit the file's times are kept in. */
function milliseconds(seconds: number): number {
	return Math.round(seconds * 1000);
}

function date(value: unknown): Date | null {
	return value === null || value === undefined ? null : new Date(value as number);
}

function json(value: unknown): unknown {
	return typeof value === 'string' ? JSON.parse(value) : null;
}

/** Rows as node:sqlite gives them: objects, times in milliseconds, JSON as text. */
const OBJECT_ROWS: RowReader = {
	value: (row, column) => (row as Row)[column],
	time: (row, column) => date((row as Row)[column]),
	json: (row, column) => json((row as Row)[column]),
};

/** A reader of rows given as arrays, with each column's position. */
interface ArrayRowReader extends RowReader {
	readonly position: Readonly<Record<string, number>>;
}

/** Rows given as arrays (allAsArrays), read through each column's position. */
function arrayRows(position: Record<string, number>): ArrayRowReader {
	return {
		position,
		value: (row, column) => (row as unknown[])[position[column]],
		time: (row, column) => date((row as unknown[])[position[column]]),
		json: (row, column) => json((row as unknown[])[position[column]]),
	};
}

/** An array row as an object, by its reader's column positions. */
function objectRow(row: unknown[], read: RowReader): Row {
	return Object.fromEntries(Object.entries((read as ArrayRowReader).position).map(([column, index]) => [column, row[index]]));
}

/** Each statement's named parameters: a batch is one JSON text, durations in milliseconds, tokens in lower case. */
type Encoders<S> = { [N in keyof S]: (parameters: S[N]) => Parameters };

/** One file of `sql/embedded/queries/` and its named parameters. */
interface Step {
	name: EmbeddedStatement;
	parameters: Parameters;
}

/**
 * Statements run as several files, in order, in one transaction, their rows joined: a SQLite
 * statement changes rows one way only (update or delete), where one Postgres statement does both.
 * Given the statement's encoded parameters.
 */
type Steps = Readonly<Record<string, (parameters: Parameters) => Step[]>>;

/** A settle's tuples with the token as the file stores it: a UUID given in upper case is the same token. */
const owned = (items: Array<[string, string, ...unknown[]]>) =>
	JSON.stringify(items.map(([key, token, ...extra]) => [key, ownerTokenText(token), ...extra]));

const KEY_PARAMETERS: Encoders<KeyStatements> = {
	reserve: (p) => ({
		// A request without evidence or inbox sends no such fields (JSON ->> of a missing element is
		// null): 10,000 keys are then a much shorter text for SQLite to parse.
		batch: JSON.stringify(
			p.requests.map((request, distinct) => {
				const { evidence, inbox } = request;
				const entry: unknown[] = [request.key, request.keySource, request.payloadHash, p.tokens[distinct]];
				if (evidence || inbox) {
					entry.push(
						evidence?.payloadJson ?? null,
						evidence?.payloadBytes ?? null,
						evidence?.source ?? null,
						evidence?.correlationId ?? null,
					);
				}
				if (inbox) entry.push(inbox.owner, inbox.item, inbox.maxAttempts, inbox.retryForMs, inbox.firstRetryMs);
				return entry;
			}),
		),
		mode: p.mode,
		lease_ms: milliseconds(p.leaseSeconds),
		retention_ms: milliseconds(p.retentionSeconds),
		execution_id: p.executionId,
		workflow_id: p.workflowId,
		instance_id: p.instanceId,
	}),
	claimForReplay: (p) => ({
		lease_ms: milliseconds(p.leaseSeconds),
		retention_ms: milliseconds(p.retentionSeconds),
		execution_id: p.executionId,
		workflow_id: p.workflowId,
		instance_id: p.instanceId,
	}),
	claimDueInbox: (p) => ({
		owner: p.owner,
		limit: p.limit,
		lease_ms: p.leaseMs,
		retention_ms: p.retentionSeconds === null ? null : milliseconds(p.retentionSeconds),
		tokens: JSON.stringify(p.tokens),
		instance_id: p.instanceId,
	}),
	nextInboxDue: (p) => ({ owner: p.owner }),
	complete: (p) => ({ items: owned(p.items) }),
	release: (p) => ({ items: owned(p.items), retry_cap_ms: p.retryCapMs }),
	fail: (p) => ({ items: owned(p.items), retry_cap_ms: p.retryCapMs }),
	hold: (p) => ({ items: owned(p.items) }),
	unsettledKeys: (p) => ({ keys: JSON.stringify(p.keys) }),
	releaseExecution: (p) => ({
		execution_id: p.executionId,
		workflow_id: p.workflowId,
		instance_id: p.instanceId,
		jitter: p.jitter,
		retry_cap_ms: p.retryCapMs,
	}),
	failExecution: (p) => ({
		execution_id: p.executionId,
		error: p.error,
		workflow_id: p.workflowId,
		instance_id: p.instanceId,
		jitter: p.jitter,
		retry_cap_ms: p.retryCapMs,
	}),
	cleanup: (p) => ({ retention_ms: milliseconds(p.retentionSeconds), limit: p.limit }),
	getKeys: (p) => ({ keys: JSON.stringify(p.keys), inbox_item: p.inboxItem ? 1 : 0 }),
	listKeys: (p) => ({
		after_key: p.afterKey,
		status: p.status,
		stuck_only: p.stuckLeasesOnly ? 1 : 0,
		older_than_ms: p.olderThanSeconds === null ? null : milliseconds(p.olderThanSeconds),
		prefix: p.keyPrefix,
		limit: p.limit,
		replayable_only: p.replayableOnly ? 1 : 0,
		max_bytes: p.maxBytes,
		dead_lettered_only: p.deadLetteredOnly ? 1 : 0,
	}),
	stats: (p) => ({ window_ms: milliseconds(p.windowSeconds) }),
	countAnswer: (p) => ({ answer: p.answer }),
	answerCounts: (p) => ({ window_ms: milliseconds(p.windowSeconds) }),
	answerCountsByHour: (p) => ({ window_ms: milliseconds(p.windowSeconds) }),
	recordExecution: (p) => ({ key: p.key, owner_token: p.ownerToken, execution_id: p.executionId }),
};

/**
 * Release deletes keys but fails an inbox event (its item is the only copy of the event): the
 * inbox events' update first, then the other keys' delete, each leaving the other's rows alone.
 */
const KEY_STEPS: Steps = {
	release: ({ items, retry_cap_ms }) => [
		{ name: 'releaseInbox', parameters: { items, retry_cap_ms } },
		{ name: 'release', parameters: { items } },
	],
	releaseExecution: ({ execution_id, workflow_id, instance_id, jitter, retry_cap_ms }) => [
		{ name: 'releaseExecutionInbox', parameters: { execution_id, workflow_id, instance_id, jitter, retry_cap_ms } },
		{ name: 'releaseExecution', parameters: { execution_id, workflow_id, instance_id } },
	],
};

const ORDER_PARAMETERS: Encoders<OrderStatements> = {
	orderAdvance: (p) => ({ items: JSON.stringify(p.items), equal: p.equalVersion, execution_id: p.executionId, workflow_id: p.workflowId }),
};

// Statements without rows to return: their count is the rows they changed.
const COUNTED: ReadonlySet<string> = new Set(['cleanup', 'countAnswer']);

/** The writes that run on the store's background thread, by their first statement. */
type OffThread<S> = { [N in keyof S]?: (parameters: S[N]) => boolean };

const KEYS_OFF_THREAD: OffThread<KeyStatements> = {
	reserve: (p) => p.requests.length >= OFF_THREAD_KEYS,
	complete: (p) => p.items.length >= OFF_THREAD_KEYS,
	release: (p) => p.items.length >= OFF_THREAD_KEYS,
	fail: (p) => p.items.length >= OFF_THREAD_KEYS,
	hold: (p) => p.items.length >= OFF_THREAD_KEYS,
	// Every live reservation of one execution: as many keys as it reserved.
	releaseExecution: () => true,
	failExecution: () => true,
	// Every chunk: deleting 1,000 rows of random keys touches up to 1,000 pages of the key index.
	cleanup: () => true,
};

/**
 * One table of one family in the store file, on the process's one connection to the file (opened
 * on first use, reopened after a close): its schema check before first use, and its statements,
 * each run in a transaction of the kind its rule asks for (connection.ts).
 */
export class EmbeddedDriver<S> implements StoreDriver<S> {
	readonly backend = 'embedded' as const;
	readonly file: string;
	protected readonly table: string;
	private readonly createTableOption: boolean;
	private readonly lockWaitMs: number;

	constructor(
		options: EmbeddedStoreOptions,
		private readonly family: 'keys' | 'order',
		defaultTable: string,
		private readonly parameters: Encoders<S>,
		private readonly offThread: OffThread<S> = {},
		private readonly steps: Steps = {},
	) {
		this.file = options.file;
		this.table = embeddedTableName(options.table ?? defaultTable).name;
		this.createTableOption = options.createTable ?? true;
		this.lockWaitMs = options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS;
	}

	async ready(): Promise<void> {
		await this.readyConnection();
	}

	async createTable(): Promise<void> {
		await ensureTable(connectionFor(this.file), this.family, this.table, true, this.lockWaitMs);
	}

	async send(
		operation: StoreOperation,
		statement: Statement<S>,
		rule: SendRule,
		then?: (result: StatementResult) => Statement<S> | undefined,
	): Promise<StatementResult[]> {
		const connection = await this.readyConnection();
		const wait: LockWait = { lockWaitMs: this.lockWaitMs, operation };
		const work = (): StatementResult[] => {
			const first = this.run(connection, statement);
			const next = then?.(first);
			return next ? [first, this.run(connection, next)] : [first];
		};
		if (rule.kind !== 'read' && this.offThread[statement.name]?.(statement.parameters)) {
			const commit: ThreadCommit = rule.kind !== 'losableWrite' ? 'synced' : rule.awaitSync ? 'unsynced' : 'losable';
			return await this.writeOffThread(connection, statement, wait, commit, then);
		}
		switch (rule.kind) {
			case 'write':
				return rule.durableIf ? withWriteSyncedWhen(connection, wait, work, rule.durableIf) : withWriteLock(connection, wait, work);
			case 'writeOnce':
				return withWriteLock(connection, wait, work);
			case 'losableWrite':
				return rule.awaitSync ? withUnsyncedWrite(connection, wait, work) : withLosableWrite(connection, wait, work);
			case 'read':
				if (!rule.scan) return read(connection, wait, work);
				return [await this.readOffThread(connection, statement, wait)];
		}
	}

	/** The process's connection to the file, its table checked (or created) once. */
	private async readyConnection(): Promise<EmbeddedConnection> {
		const connection = connectionFor(this.file);
		await ensureTable(connection, this.family, this.table, this.createTableOption, this.lockWaitMs);
		return connection;
	}

	/** A read that may scan the whole table, off the event loop's thread. */
	private async readOffThread(connection: EmbeddedConnection, statement: Statement<S>, wait: LockWait): Promise<StatementResult> {
		const text = renderEmbeddedStatement(statement.name as EmbeddedStatement, this.family, this.table, statement.omit);
		const rows = await readAllOffThread(connection.file, text, this.parameters[statement.name](statement.parameters), wait);
		assertSameFile(connection);
		return { rows, rowCount: rows.length, uncertain: false, read: OBJECT_ROWS };
	}

	/**
	 * A write in its own transaction on the background thread, off the event loop's thread: the
	 * statement (its steps), and the one `then` names from its result, in the same transaction.
	 */
	private async writeOffThread(
		connection: EmbeddedConnection,
		statement: Statement<S>,
		wait: LockWait,
		commit: ThreadCommit,
		then?: (result: StatementResult) => Statement<S> | undefined,
	): Promise<StatementResult[]> {
		const steps = this.stepsOf(statement);
		let next: Statement<S> | undefined;
		const results = await writeOnThread(
			connection,
			wait,
			steps.map((step) => this.threadStatement(step, statement.omit)),
			commit,
			(stepResults) => {
				next = then?.(this.threadResults(steps, stepResults));
				if (!next) return undefined;
				const [only] = this.stepsOf(next);
				return this.threadStatement(only, next.omit);
			},
		);
		// The path named another file: nothing was written, and the last answer says so.
		if (results.length < steps.length) return [this.threadResults(steps.slice(-1), results)];
		const first = this.threadResults(steps, results.slice(0, steps.length));
		return next && results.length > steps.length ? [first, this.threadResults(this.stepsOf(next), results.slice(steps.length))] : [first];
	}

	private threadStatement(step: Step, omit: SqlSection | undefined): ThreadStatement {
		return {
			sql: renderEmbeddedStatement(step.name, this.family, this.table, omit),
			parameters: step.parameters,
			rows: COUNTED.has(step.name) ? 'changes' : 'arrays',
		};
	}

	/** The thread's answers to a statement's steps, as one result. */
	private threadResults(steps: Step[], results: ThreadWriteResult[]): StatementResult {
		const answers = results.map((result, index): StatementResult => {
			if (COUNTED.has(steps[index].name)) return { rows: [], rowCount: result.changes ?? 0, uncertain: false, read: OBJECT_ROWS };
			const rows = result.rows ?? [];
			const read = result.columns
				? arrayRows(Object.fromEntries(result.columns.map((column, position) => [column, position])))
				: OBJECT_ROWS;
			return { rows, rowCount: rows.length, uncertain: false, read };
		});
		return joined(answers);
	}

	/** The files a statement runs, in order, with their parameters: one, unless the driver splits it (`steps`). */
	protected stepsOf(statement: Statement<S>): Step[] {
		const parameters = this.parameters[statement.name](statement.parameters);
		return this.steps[statement.name as string]?.(parameters) ?? [{ name: statement.name as EmbeddedStatement, parameters }];
	}

	/** One statement (each of its steps), synchronously, inside the caller's transaction. */
	protected run(connection: EmbeddedConnection, statement: Statement<S>): StatementResult {
		return joined(this.stepsOf(statement).map((step) => this.runStep(connection, step, statement.omit)));
	}

	private runStep(connection: EmbeddedConnection, { name, parameters }: Step, omit: SqlSection | undefined): StatementResult {
		const prepared = namedStatement(connection, name, this.family, this.table, omit);
		if (COUNTED.has(name)) return { rows: [], rowCount: Number(prepared.run(parameters).changes), uncertain: false, read: OBJECT_ROWS };
		if (name === 'reserve') {
			// A batch of 10,000 rows: arrays skip building an object per row.
			const { rows, column } = allAsArrays(prepared, parameters);
			return { rows, rowCount: rows.length, uncertain: false, read: arrayRows(column) };
		}
		const rows = prepared.all(parameters);
		return { rows, rowCount: rows.length, uncertain: false, read: OBJECT_ROWS };
	}
}

/** The results of a statement's steps as one: their rows in order, as objects when there are several. */
function joined(results: StatementResult[]): StatementResult {
	if (results.length === 1) return results[0];
	const rows = results.flatMap(({ rows: stepRows, read }) =>
		stepRows.map((row) => (read === OBJECT_ROWS ? row : objectRow(row as unknown[], read))),
	);
	return {
		rows,
		rowCount: results.reduce((sum, result) => sum + result.rowCount, 0),
		uncertain: false,
		read: OBJECT_ROWS,
	};
}

/** What the file holds as itself: exact text only (no NUL, no lone surrogate). */
const EMBEDDED_KEYS: KeyText = {
	// A key that is not exact text could never be found again as itself: the batch is refused
	// before anything is stored (Postgres refuses the whole statement too).
	assertReservable: (keys) => {
		for (const key of keys) assertExactText(key, 'idempotency key');
	},
	storable: (key) => inexactTextReason(key) === undefined,
	recordable: (key) => inexactTextReason(key) === undefined,
	storedAs: (key) => key,
};

function isReplayable(row: Row): boolean {
	return row.status === 'failed' || (row.status === 'processing' && !row.lease_active && row.locked_until !== null);
}

export class EmbeddedKeyDriver extends EmbeddedDriver<KeyStatements> implements KeyDriver {
	readonly keys = EMBEDDED_KEYS;
	readonly cleanupChunkRows = CLEANUP_CHUNK_ROWS;

	constructor(options: EmbeddedStoreOptions, defaultTable: string) {
		super(options, 'keys', defaultTable, KEY_PARAMETERS, KEYS_OFF_THREAD, KEY_STEPS);
	}

	/** One local transaction: its answer is never lost, and another process's lock is waited for instead. */
	retryRule(): Extract<SendRule, { kind: 'write' }> {
		return { kind: 'write', retryUntil: null };
	}

	noRowError(key: string): Error {
		return new UnexpectedResultError(
			`The embedded store returned no row for reserved key ${JSON.stringify(key.slice(0, 80))} (a trigger on "${this.table}"?). The other keys of the batch may have been reserved.`,
		);
	}

	/**
	 * Claim for Replay is two statements in one transaction: the keys as they are, then the claim
	 * of those replayable. Its rows are the claimed keys (`claimed` 1) and the others as they were.
	 */
	protected run(connection: EmbeddedConnection, statement: Statement<KeyStatements>): StatementResult {
		if (statement.name !== 'claimForReplay') return super.run(connection, statement);
		const { claims } = statement.parameters as KeyStatements['claimForReplay'];
		const tokenOf = new Map(claims);
		const current = namedStatement(connection, 'claimForReplayCurrent', 'keys', this.table).all({
			keys: JSON.stringify(claims.map(([key]) => key)),
		});
		const claimable = current.filter(isReplayable).map((row) => [row.key as string, tokenOf.get(row.key as string)]);
		const claimed =
			claimable.length === 0
				? []
				: namedStatement(connection, 'claimForReplay', 'keys', this.table).all({
						claims: JSON.stringify(claimable),
						...KEY_PARAMETERS.claimForReplay(statement.parameters as KeyStatements['claimForReplay']),
					});
		const claimedKeys = new Set(claimed.map((row) => row.key));
		const rows = [
			...claimed.map((row) => ({ ...row, claimed: 1 })),
			...current.filter((row) => !claimedKeys.has(row.key)).map((row) => ({ ...row, claimed: 0 })),
		];
		return { rows, rowCount: rows.length, uncertain: false, read: OBJECT_ROWS };
	}
}

export class EmbeddedOrderDriver extends EmbeddedDriver<OrderStatements> {
	constructor(options: EmbeddedStoreOptions, defaultTable: string) {
		super(options, 'order', defaultTable, ORDER_PARAMETERS);
	}
}
