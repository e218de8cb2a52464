// Runs Idempotency Reserve (Store: Embedded) once in this process and prints its outputs, or the
// error it threw, as one JSON line. Spawned by a test to run the node on a Node without node:sqlite.
import type { IExecuteFunctions } from 'n8n-workflow';

import type { IdempotencyReserve as ReserveNode } from '../../../../nodes/IdempotencyReserve/IdempotencyReserve.node';
import { fakeExecuteFunctions, webhookItem } from '../../../support/fakeExecuteFunctions';

// Required with its extension: without it Node would find the codex file IdempotencyReserve.node.json first.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { IdempotencyReserve } = require('../../../../nodes/IdempotencyReserve/IdempotencyReserve.node.ts') as {
	IdempotencyReserve: typeof ReserveNode;
};

async function main(): Promise<void> {
	const { storagePath, continueOnFail } = JSON.parse(process.argv[2]) as { storagePath: string; continueOnFail: boolean };
	const base = fakeExecuteFunctions({
		parameters: { store: 'embedded', keySource: 'auto', mode: 'permanent', options: {} },
		items: [webhookItem({ id: 'evt_child' })],
		credential: {},
		continueOnFail,
	});
	const context = {
		...base,
		getMode: () => 'webhook',
		getWorkflowStaticData: () => ({}),
		helpers: { ...base.helpers, getStoragePath: () => storagePath },
	} as unknown as IExecuteFunctions;
	try {
		const outputs = await new IdempotencyReserve().execute.call(context);
		process.stdout.write(`${JSON.stringify({ outputs })}\n`);
	} catch (error) {
		process.stdout.write(`${JSON.stringify({ thrown: { name: (error as Error).name, message: (error as Error).message } })}\n`);
	}
}

void main();
