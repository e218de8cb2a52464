import { KEY_SOURCE_WORDS, keySourceInWords, type DerivedKey } from '../../../lib/keys/deriveKey';
import type { CompactRecord, IdempotencyRecord, ReservationResult } from '../../../lib/types';
import { idempotencyOutput, unverifiedOutput, type OutputSettings } from '../../../lib/pipeline/idempotencyOutput';

const TOKEN = '6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const LEASE_END = new Date('2026-11-30T10:05:00.000Z');
const derived: DerivedKey = { key: 'evt:evt_1', keySource: 'event-id', hashed: false };

function compactRecord(overrides: Partial<CompactRecord> = {}): CompactRecord {
	return {
		key: 'evt:evt_1',
		status: 'completed',
		attempts: 1,
		lockedUntil: null,
		payloadHash: null,
		response: null,
		leaseActive: false,
		...overrides,
	};
}

function fullRecord(overrides: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
	return {
		...compactRecord(),
		duplicateCount: 0,
		firstSeen: new Date('2026-11-30T10:00:00.000Z'),
		lastSeen: new Date('2026-11-30T10:00:00.000Z'),
		expiresAt: new Date('2026-12-30T10:00:00.000Z'),
		executionId: '41',
		workflowId: 'wf-1',
		keySource: 'event-id',
		completedAt: new Date('2026-11-30T10:00:00.000Z'),
		lastError: null,
		...overrides,
	};
}

function result<R extends CompactRecord>(record: R, outcome: ReservationResult['outcome'] = 'new'): ReservationResult<R> {
	return {
		outcome,
		key: record.key,
		ownerToken: outcome === 'new' ? TOKEN : null,
		reclaimed: record.attempts > 1,
		repeatInBatch: false,
		payloadMismatch: null,
		record,
	};
}

const compact = (overrides: Partial<OutputSettings> = {}): OutputSettings => ({
	mode: 'permanent',
	detail: 'compact',
	fingerprinting: false,
	...overrides,
});

describe('Output: Compact (the default)', () => {
	it('a New item in Permanent mode: key, isNew, outcome, owner token, attempts, and nothing else', () => {
		expect(idempotencyOutput(result(compactRecord()), derived, compact())).toEqual({
			key: 'evt:evt_1',
			isNew: true,
			outcome: 'new',
			ownerToken: TOKEN,
			attempts: 1,
		});
	});

	it("Lease mode adds the lease end, which bounds the Key node's retries", () => {
		const output = idempotencyOutput(
			result(compactRecord({ status: 'processing', lockedUntil: LEASE_END, leaseActive: true })),
			derived,
			compact({ mode: 'lease' }),
		);
		expect(output).toEqual({
			key: 'evt:evt_1',
			isNew: true,
			outcome: 'new',
			ownerToken: TOKEN,
			attempts: 1,
			lockedUntil: '2026-11-30T10:05:00.000Z',
		});
	});

	it('a Duplicate carries the stored response to replay (null when none), and no owner token', () => {
		const stored = { received: true, order: 7 };
		expect(idempotencyOutput(result(compactRecord({ response: stored }), 'duplicate'), derived, compact())).toEqual({
			key: 'evt:evt_1',
			isNew: false,
			outcome: 'duplicate',
			ownerToken: null,
			attempts: 1,
			response: stored,
		});
		expect(idempotencyOutput(result(compactRecord(), 'in_progress'), derived, compact())).toMatchObject({
			outcome: 'in_progress',
			response: null,
		});
	});

	it('payloadMismatch only when Payload Fingerprint is on; manualTest only when the key is under the test scope', () => {
		const mismatched = { ...result(compactRecord({ payloadHash: 'a' }), 'duplicate'), payloadMismatch: true };
		expect(idempotencyOutput(mismatched, derived, compact({ fingerprinting: true }))).toMatchObject({ payloadMismatch: true });
		expect(idempotencyOutput(mismatched, derived, compact())).not.toHaveProperty('payloadMismatch');
		const manual: DerivedKey = { ...derived, key: 'n8n-manual-test:evt:evt_1', manualTest: true };
		expect(idempotencyOutput(result(compactRecord()), manual, compact())).toMatchObject({ manualTest: true });
		expect(idempotencyOutput(result(compactRecord()), derived, compact())).not.toHaveProperty('manualTest');
	});

	it('is built from a full record too (Execute Query reserves one key with the full statement)', () => {
		expect(idempotencyOutput(result(fullRecord()), derived, compact())).toEqual(
			idempotencyOutput(result(compactRecord()), derived, compact()),
		);
	});
});

describe('Output: Full', () => {
	it("every column of the row, with keySource in the Key Source options' words", () => {
		const output = idempotencyOutput(result(fullRecord()), derived, { mode: 'permanent', detail: 'full', fingerprinting: false });
		expect(Object.keys(output)).toEqual([
			'key',
			'keySource',
			'keyHashed',
			'isNew',
			'outcome',
			'mode',
			'status',
			'ownerToken',
			'firstSeen',
			'lastSeen',
			'attempts',
			'duplicateCount',
			'reclaimed',
			'repeatInBatch',
			'lockedUntil',
			'expiresAt',
			'reservedByExecutionId',
			'reservedByWorkflowId',
			'executionId',
			'workflowId',
			'manualTest',
			'completedAt',
			'lastError',
			'response',
			'payloadMismatch',
		]);
		expect(output).toMatchObject({
			keySource: 'Event ID',
			firstSeen: '2026-11-30T10:00:00.000Z',
			reservedByExecutionId: '41',
			manualTest: false,
		});
	});

	it('refuses a compact record instead of giving an object with holes', () => {
		expect(() => idempotencyOutput(result(compactRecord()), derived, { mode: 'permanent', detail: 'full', fingerprinting: false })).toThrow(
			/full reserved row/,
		);
	});
});

describe('unverified items (On Store Unavailable: Let Through)', () => {
	it('Compact: the routing fields and why; Full: every field, keySource in words', () => {
		expect(unverifiedOutput(derived, 'compact', 'permanent', 'refused')).toEqual({
			key: 'evt:evt_1',
			isNew: false,
			outcome: 'unverified',
			ownerToken: null,
			unverified: true,
			unverifiedReason: 'refused',
		});
		expect(unverifiedOutput({ ...derived, manualTest: true }, 'compact', 'lease', 'refused')).toMatchObject({ manualTest: true });
		expect(unverifiedOutput(derived, 'full', 'lease', 'refused')).toEqual({
			key: 'evt:evt_1',
			keySource: 'Event ID',
			keyHashed: false,
			isNew: false,
			outcome: 'unverified',
			unverified: true,
			unverifiedReason: 'refused',
			mode: 'lease',
			status: null,
			ownerToken: null,
			manualTest: false,
		});
	});
});

describe("keySource in the user's words", () => {
	it('names each stored identifier by the Key Source option it comes from; other stored values pass through', () => {
		expect(KEY_SOURCE_WORDS).toEqual({
			'event-id': 'Event ID',
			header: 'Header',
			custom: 'Custom Value',
			field: 'Field',
			'raw-body-hash': 'Body Hash',
			'canonical-json-hash': 'Body Hash (Parsed JSON, No Raw Body)',
		});
		expect(keySourceInWords('recipe')).toBe('recipe');
		expect(keySourceInWords(null)).toBeNull();
		expect(keySourceInWords('toString')).toBe('toString');
	});
});
