// Which n8n topology this e2e run uses: 'single' (one n8n process) or 'queue' (n8n's queue mode:
// Redis, a main instance receiving webhooks, two `n8n worker` processes). E2E_TOPOLOGY picks it;
// scripts/test-e2e.js runs the suite once per topology.
import { selectedTier, type Topology } from './tags';

const selected = process.env.E2E_TOPOLOGY ?? 'single';
if (selected !== 'single' && selected !== 'queue') throw new Error(`E2E_TOPOLOGY must be single or queue, not ${selected}`);
export const TOPOLOGY: Topology = selected;

/**
 * Queue mode's test settings. The lease is short so that recovery after a crash fits in a test (the
 * template's default is 300 s); Bull's lock is short so that a killed worker's job is declared
 * stalled (and failed, n8n sets maxStalledCount 0) in ~20 s instead of ~90 s.
 */
export const QUEUE: {
	workers: number;
	workerFolders: string;
	workerConcurrency: number;
	leaseSeconds: number;
	cleanupEverySeconds: number;
	longSoak: { events: number; deliveries: number };
	env: Record<string, string>;
} = {
	workers: 2,
	// Where the workers start: 'own' user folders (separate hosts) or main's ('shared', one host).
	// Tests that need one of them switch on the running stack (support/workerFolders.js).
	workerFolders: process.env.E2E_WORKER_FOLDERS ?? 'own',
	workerConcurrency: 5,
	leaseSeconds: Number(process.env.E2E_LEASE_SECONDS ?? 20),
	cleanupEverySeconds: 3,
	// The long soak (test 3): the full size in the full tier; a tenth of it, same assertions, in the
	// compatibility tier (E2E_TIER, test/support/e2e/tags.ts) or with E2E_SHORT_SOAK=1. On n8n 1.x in queue
	// mode it waits more than it works: a delivery's answer took 2.7 s in the median (5.7 deliveries/s).
	longSoak:
		process.env.E2E_SHORT_SOAK === '1' || selectedTier() === 'compatibility'
			? { events: 100, deliveries: 500 }
			: { events: 1000, deliveries: 5000 },
	env: {
		QUEUE_WORKER_LOCK_DURATION: '15000',
		QUEUE_WORKER_LOCK_RENEW_TIME: '3000',
		QUEUE_WORKER_STALLED_INTERVAL: '5000',
	},
};
