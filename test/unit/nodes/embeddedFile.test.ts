import { embeddedStoreFile } from '../../../nodes/shared/embeddedFile';

// n8n-core's getStoragePath() is `<n8n folder>/storage/<node type>` (n8n 1.123 and 2.x,
// file-system-helper-functions.js): one folder per node type. Every node of the package must open
// one file, so the file is derived from it one level up, in the package's own folder.

const FILE = '/home/node/.n8n/storage/n8n-nodes-idempotency/keys.sqlite';

describe('embeddedStoreFile', () => {
	it.each([
		'n8n-nodes-idempotency.idempotencyReserve',
		'n8n-nodes-idempotency.idempotencyKey',
		'n8n-nodes-idempotency.idempotencyOrderGuard',
		// Loaded from ~/.n8n/custom the node types are named CUSTOM.<node>.
		'CUSTOM.idempotencyReserve',
		// A scoped package's node type is two folders deep.
		'@acme/n8n-nodes-idempotency.idempotencyReserve',
	])('gives every node type one file: %s', (nodeType) => {
		expect(embeddedStoreFile(`/home/node/.n8n/storage/${nodeType}`, nodeType)).toBe(FILE);
	});

	it("never names n8n's own database", () => {
		expect(
			embeddedStoreFile('/home/node/.n8n/storage/n8n-nodes-idempotency.idempotencyReserve', 'n8n-nodes-idempotency.idempotencyReserve'),
		).not.toMatch(/database\.sqlite/);
	});

	it('normalizes a storage path with a trailing separator', () => {
		expect(embeddedStoreFile('/home/node/.n8n/storage/CUSTOM.idempotencyKey/', 'CUSTOM.idempotencyKey')).toBe(FILE);
	});
});
