import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// Idempotency Reserve with Store: Embedded on a Node without node:sqlite (n8n 1.x on an old Node,
// or Node started with --no-experimental-sqlite): a real child process whose Node has no
// node:sqlite. The refusal is routed as any store failure: Not Reserved under Continue, a failed
// execution under Stop Workflow; nothing goes on to the business step.

const CHILD = path.join(__dirname, 'support', 'reserveInChild.ts');
const REGISTER = path.join(__dirname, '..', '..', 'support', 'register-ts.js');
// Where the flag exists (Node 22.5+), it takes node:sqlite away; older Nodes never had it.
const WITHOUT_SQLITE = process.allowedNodeEnvironmentFlags.has('--no-experimental-sqlite') ? ['--no-experimental-sqlite'] : [];

let storagePath: string;
beforeAll(() => {
	storagePath = path.join(
		mkdtempSync(path.join(tmpdir(), 'embedded-unavailable-')),
		'.n8n',
		'storage',
		'n8n-nodes-idempotency.idempotencyReserve',
	);
});
afterAll(() => rmSync(path.dirname(path.dirname(path.dirname(storagePath))), { recursive: true, force: true }));

function runReserve(continueOnFail: boolean): {
	outputs?: Array<Array<{ json: Record<string, unknown>; pairedItem: unknown }>>;
	thrown?: { name: string; message: string };
} {
	const child = spawnSync(process.execPath, [...WITHOUT_SQLITE, '-r', REGISTER, CHILD, JSON.stringify({ storagePath, continueOnFail })], {
		encoding: 'utf8',
		timeout: 60_000,
	});
	const line = child.stdout.trim().split('\n').pop() ?? '';
	if (!line.startsWith('{')) throw new Error(`child printed no result (status ${child.status}): ${child.stderr}`);
	return JSON.parse(line);
}

it('the child really has no node:sqlite', () => {
	const probe = spawnSync(process.execPath, [...WITHOUT_SQLITE, '-e', "require('node:sqlite')"], { encoding: 'utf8' });
	expect(probe.status).not.toBe(0);
	expect(probe.stderr).toMatch(/sqlite/);
});

it('Continue: the item leaves through Not Reserved with a message naming the Node needed and Postgres', () => {
	const { outputs } = runReserve(true);
	expect(outputs).toBeDefined();
	const [fresh, duplicate, notReserved] = outputs!;
	expect([fresh.length, duplicate.length, notReserved.length]).toEqual([0, 0, 1]);
	expect(notReserved[0].pairedItem).toEqual({ item: 0 });
	expect(String(notReserved[0].json.error)).toMatch(/node:sqlite/);
	expect(String(notReserved[0].json.error)).toMatch(/Node 22\.13/);
	expect(String(notReserved[0].json.error)).toMatch(/Store: Postgres/);
	expect(existsSync(path.join(path.dirname(storagePath), 'n8n-nodes-idempotency', 'keys.sqlite'))).toBe(false);
});

it('Stop Workflow: the node throws a NodeOperationError with the same message', () => {
	const { thrown } = runReserve(false);
	expect(thrown?.name).toBe('NodeOperationError');
	expect(thrown?.message).toMatch(/node:sqlite/);
});
