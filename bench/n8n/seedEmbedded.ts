// Fills an embedded store file with keys whose retention has ended (and live ones) through the
// built store, for the cleanup benchmark: node -r ./test/support/register-ts.js bench/n8n/seedEmbedded FILE EXPIRED LIVE.
// Needs a Node with node:sqlite; n8n may have the file open meanwhile (one host, WAL).
import { randomUUID } from 'node:crypto';
import path from 'node:path';

import type { ReserveOptions } from '../../lib/types';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the built package (dist/), what n8n runs
const { openEmbeddedKeyStore, closeEmbeddedStores } = require(
	path.join(__dirname, '..', '..', 'dist', 'lib', 'store', 'embedded', 'index'),
) as typeof import('../../lib/store/embedded/index');

async function main([file, expired, live]: string[]): Promise<void> {
	const store = openEmbeddedKeyStore({ file, createTable: true });
	const options: ReserveOptions & { detail: 'compact' } = {
		mode: 'permanent',
		leaseSeconds: 300,
		retentionSeconds: 30 * 24 * 3600,
		detail: 'compact',
	};
	const fill = async (count: number, retentionSeconds: number) => {
		for (let done = 0; done < count; done += 10000) {
			const requests = Array.from({ length: Math.min(10000, count - done) }, () => ({
				key: `cleanup_${randomUUID()}`,
				keySource: 'header',
				payloadHash: null,
			}));
			await store.reserve(requests, { ...options, retentionSeconds });
		}
	};
	await fill(Number(expired), 1);
	await fill(Number(live), options.retentionSeconds);
	closeEmbeddedStores();
	// Retention of 1 s: wait it out, so every expired key is past its end when the cleanup starts.
	await new Promise((resolve) => setTimeout(resolve, 1500));
}

main(process.argv.slice(2)).catch((error) => {
	console.error(`seeding failed: ${error instanceof Error ? error.message : String(error)}`);
	process.exit(1);
});
