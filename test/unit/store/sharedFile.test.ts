import {
	EmbeddedStoreNotConfirmedError,
	EmbeddedStoreNotSharedError,
	STORE_ID_ENV,
	isQueueMode,
	sharedFileVerdict,
} from '../../../lib/store/embedded/sharedFile';

const OWN = '6f1d3c2a-8b7e-4d5f-9a0b-1c2d3e4f5a6b';
const OTHER = '0b7d2c8e-1f4a-4c3e-9d1b-7a6f5e4d3c2b';
const FILE = '/home/node/.n8n/storage/n8n-nodes-idempotency/keys.sqlite';

describe('the queue-mode rule for the embedded store', () => {
	it('proceeds only on the file whose store id the deployment names', () => {
		expect(sharedFileVerdict({ configuredId: OWN, storeId: OWN, file: FILE })).toEqual({ proceed: true });
		// Surrounding blanks (a value pasted into an env file) do not matter.
		expect(sharedFileVerdict({ configuredId: ` ${OWN}\n`, storeId: OWN, file: FILE }).proceed).toBe(true);
	});

	it.each([undefined, '', '   '])('refuses when no store id is configured (%j), naming the id and the variable to set', (configuredId) => {
		const verdict = sharedFileVerdict({ configuredId, storeId: OWN, file: FILE });
		expect(verdict.proceed).toBe(false);
		expect(verdict.error).toBeInstanceOf(EmbeddedStoreNotConfirmedError);
		expect(verdict.error?.message).toContain(`${STORE_ID_ENV}=${OWN}`);
		expect(verdict.error?.message).toContain(FILE);
		expect(verdict.error?.message).toMatch(/Nothing was reserved.*Postgres/s);
	});

	it('refuses a process whose file has another id (another host, another n8n folder, a replaced file)', () => {
		const verdict = sharedFileVerdict({ configuredId: OTHER, storeId: OWN, file: FILE });
		expect(verdict.proceed).toBe(false);
		expect(verdict.error).toBeInstanceOf(EmbeddedStoreNotSharedError);
		expect(verdict.error?.message).toMatch(/different embedded key file.*Store: Postgres/s);
		expect(verdict.error?.message).toContain(OTHER);
	});

	it('compares ids exactly: no prefix, no case folding', () => {
		expect(sharedFileVerdict({ configuredId: OWN.slice(0, 8), storeId: OWN, file: FILE }).proceed).toBe(false);
		expect(sharedFileVerdict({ configuredId: OWN.toUpperCase(), storeId: OWN, file: FILE }).proceed).toBe(false);
	});
});

describe('queue mode as n8n reads it', () => {
	it.each([
		['queue', ['node', 'n8n', 'start'], true],
		[' queue\n', ['node', 'n8n'], true],
		['regular', ['node', 'n8n', 'start'], false],
		[undefined, ['node', 'n8n', 'worker', '--concurrency=5'], true],
		[undefined, ['node', 'n8n', '--tunnel', 'webhook'], true],
		[undefined, ['node', 'n8n'], false],
	])('EXECUTIONS_MODE %j with %j → %s', (mode, argv, expected) => {
		expect(isQueueMode(mode, argv)).toBe(expected);
	});
});
